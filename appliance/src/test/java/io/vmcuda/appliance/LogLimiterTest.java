package io.vmcuda.appliance;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import org.junit.jupiter.api.Test;

/** A flood of lines of one kind leaves its first lines and one count per window in the log, not the flood. */
class LogLimiterTest {
    private final List<String> lines = new ArrayList<>();
    private final Logger log = Logger.getLogger("LogLimiterTest");
    private long now = 1_000;

    LogLimiterTest() {
        log.setUseParentHandlers(false);
        log.addHandler(new Handler() {
            @Override
            public void publish(LogRecord r) {
                lines.add(r.getLevel() + " " + r.getMessage());
            }

            @Override
            public void flush() {}

            @Override
            public void close() {}
        });
    }

    @Test
    void theFirstLinesOfAKindAreLoggedTheRestCountedOncePerWindow() {
        LogLimiter l = new LogLimiter(log, () -> now);
        for (int i = 0; i < 1000; i++) l.log(Level.WARNING, "refused connections", "refused #" + i);
        l.log(Level.INFO, "timeouts", "timeout #0"); // another kind has its own window
        List<String> expected = new ArrayList<>();
        for (int i = 0; i < LogLimiter.LINES_PER_WINDOW; i++) expected.add("WARNING refused #" + i);
        expected.add("INFO timeout #0");
        assertEquals(expected, lines);

        l.flush(); // the window has not ended: nothing to say yet
        assertEquals(expected.size(), lines.size());

        now += TimeUnit.SECONDS.toNanos(LogLimiter.WINDOW_SECONDS);
        l.flush(); // what the timer does when the flood has stopped
        int unlogged = 1000 - LogLimiter.LINES_PER_WINDOW;
        assertEquals("WARNING refused connections: " + unlogged + " more not logged in the last 60 s (at most "
                + LogLimiter.LINES_PER_WINDOW + " lines of a kind are logged per 60 s)", lines.get(lines.size() - 1));
        assertEquals(expected.size() + 1, lines.size(), "a kind with nothing unlogged needs no summary");

        // a new window: its first lines are logged again
        l.log(Level.WARNING, "refused connections", "refused again");
        assertEquals("WARNING refused again", lines.get(lines.size() - 1));
    }

    @Test
    void aFloodThatGoesOnGetsItsCountWithTheNextWindowsFirstLine() {
        LogLimiter l = new LogLimiter(log, () -> now);
        for (int i = 0; i < LogLimiter.LINES_PER_WINDOW + 3; i++) l.log(Level.INFO, "errors", "error " + i);
        now += TimeUnit.SECONDS.toNanos(LogLimiter.WINDOW_SECONDS) + 1;
        l.log(Level.INFO, "errors", "error next");
        assertEquals(List.of("INFO errors: 3 more not logged in the last 60 s (at most " + LogLimiter.LINES_PER_WINDOW
                + " lines of a kind are logged per 60 s)", "INFO error next"), lines.subList(lines.size() - 2, lines.size()));
    }
}
