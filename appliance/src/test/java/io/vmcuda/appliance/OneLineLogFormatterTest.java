package io.vmcuda.appliance;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.logging.Level;
import java.util.logging.LogRecord;
import org.junit.jupiter.api.Test;

/** A tenant's program name (or any text of theirs) cannot forge a line of the daemon's log. */
class OneLineLogFormatterTest {
    @Test
    void controlCharactersInMessagesAreEscaped() {
        LogRecord r = new LogRecord(Level.INFO, "session 7 ready: evil\n2026-11-23T00:00:00.000 INFO   [Daemon] forged\r\u001b[31m");
        r.setLoggerName("io.vmcuda.appliance.session.SessionManager");
        String line = new OneLineLogFormatter().format(r);
        assertEquals(1, line.chars().filter(c -> c == '\n').count(), line);
        assertTrue(line.endsWith("[SessionManager] session 7 ready: evil\\n2026-11-23T00:00:00.000 INFO   [Daemon] forged\\r\\x1b[31m\n"), line);
        assertEquals("plain text, untouched", OneLineLogFormatter.escaped("plain text, untouched"));
        assertEquals("a\\x2028b", OneLineLogFormatter.escaped("a\u2028b"));
    }
}
