package io.vmcuda.appliance;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

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
    void theOptionIsTakenOutOfTheDaemonsArguments() {
        String[] args = {"--listen", "127.0.0.1:1", "--log-level", "debug", "--state-dir=x"};
        assertEquals(Level.FINE, Vmcudad.logLevelOption(args));
        assertArrayEquals(new String[] {"--listen", "127.0.0.1:1", "--state-dir=x"}, Vmcudad.withoutLogLevel(args));
        assertEquals(Level.WARNING, Vmcudad.logLevelOption(new String[] {"--log-level=warn"}));
        assertNull(Vmcudad.logLevelOption(new String[] {"--listen", "127.0.0.1:1"}));
        assertThrows(IllegalArgumentException.class, () -> Vmcudad.logLevelOption(new String[] {"--log-level"}));
    }
}
