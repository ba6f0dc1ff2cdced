package io.vmcuda.appliance;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import org.junit.jupiter.api.Test;

/** --log-level / log.level, and the priorities journald files each line under. */
class LogLevelTest {
    private static String line(boolean journald, Level level) {
        LogRecord r = new LogRecord(level, "m");
        r.setLoggerName("io.vmcuda.appliance.Daemon");
        return new OneLineLogFormatter(journald).format(r);
    }

    @Test
    void namesOperatorsUse() {
        assertEquals(Level.SEVERE, LogLevel.parse("error"));
        assertEquals(Level.WARNING, LogLevel.parse("WARN"));
        assertEquals(Level.INFO, LogLevel.parse(" info "));
        assertEquals(Level.FINE, LogLevel.parse("debug"));
        var e = assertThrows(IllegalArgumentException.class, () -> LogLevel.parse("verbose"));
        assertTrue(e.getMessage().contains("error, warn, info, debug"), e.getMessage());
    }

    @Test
    void underJournaldEachLineCarriesItsPriority() {
        assertTrue(line(true, Level.SEVERE).startsWith("<3>"));
        assertTrue(line(true, Level.WARNING).startsWith("<4>"));
        assertTrue(line(true, Level.INFO).startsWith("<6>"));
        assertTrue(line(true, Level.FINE).startsWith("<7>"));
        assertTrue(Character.isDigit(line(false, Level.SEVERE).charAt(0)), "plain lines start with the time");
    }

    @Test
    void theOptionOverridesTheConfigFilesLevel() {
        DaemonCommand c = DaemonCommand.parse("--listen", "127.0.0.1:1", "--log-level", "debug", "--state-dir=x");
        assertEquals(Level.FINE, c.logLevel);
        assertEquals(1, c.options().listen().getPort(), "the other options are read around it");
        assertEquals(Path.of("x"), c.options().stateDir());
        assertEquals(Level.WARNING, DaemonCommand.parse("--log-level=warn").logLevel);
        assertNull(DaemonCommand.parse("--listen", "127.0.0.1:1").logLevel, "not given: log.level decides");
        VmcudadRun missing = VmcudadRun.of("--log-level");
        assertEquals(2, missing.status());
        assertTrue(missing.err().startsWith("vmcudad: missing value for --log-level\n"), missing.err());
    }
}
