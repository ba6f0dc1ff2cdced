package io.vmcuda.appliance.control;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.channel.embedded.EmbeddedChannel;
import io.vmcuda.appliance.CapturedLog;
import io.vmcuda.appliance.LogLimiter;
import io.vmcuda.appliance.auth.Authenticator;
import java.time.Duration;
import java.util.List;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import org.junit.jupiter.api.Test;

/**
 * A control connection that fails for a reason other than I/O or the protocol is logged in one line, limited like the
 * other lines a peer can cause once per connection: when the daemon ran out of direct memory, 250 connections logged
 * 96 full stack traces of the same OutOfMemoryError.
 */
class ControlFailureLogTest {
    @Test
    void failuresOfManyConnectionsAreAFewLinesWithoutStackTraces() {
        List<LogRecord> warnings;
        try (CapturedLog log = new CapturedLog(ControlHandler.class)) {
            ControlContext shared = new ControlContext(null, null, null, Runnable::run, 1 << 20,
                    new Authenticator(List.of()), Duration.ofSeconds(30));
            for (int i = 0; i < 50; i++) {
                EmbeddedChannel ch = new EmbeddedChannel(new ControlHandler(shared));
                ch.pipeline().fireExceptionCaught(new OutOfMemoryError("Cannot reserve 8388608 bytes of direct buffer memory"));
                assertFalse(ch.isOpen(), "the failed connection is closed");
                ch.finishAndReleaseAll();
            }
            warnings = log.records().stream().filter(r -> r.getLevel().intValue() >= Level.WARNING.intValue()).toList();
        }
        assertEquals(LogLimiter.LINES_PER_WINDOW, warnings.size(), "50 failures, the first lines of a window");
        for (LogRecord r : warnings) {
            assertNull(r.getThrown(), "no stack trace: " + r.getMessage());
            assertTrue(r.getMessage().contains("failed: java.lang.OutOfMemoryError: Cannot reserve"), r.getMessage());
        }
    }
}
