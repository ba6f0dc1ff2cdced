package io.vmcuda.appliance;

import io.netty.util.concurrent.GlobalEventExecutor;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * Log lines that a peer can cause as often as it likes (a refused connection, a timed-out handshake, a bad token), limited
 * per kind: in each window of {@link #WINDOW_SECONDS} the first {@link #LINES_PER_WINDOW} lines of a kind are logged,
 * the rest only counted, and when the window ends one line says how many of that kind were not logged. Without this a
 * client opening thousands of connections a second from many addresses wrote a line for each: 646,000 lines (103 MB)
 * in 40 s. The first occurrence is always visible, and the daemon's counters (metrics) still count every one.
 */
public final class LogLimiter {
    public static final int LINES_PER_WINDOW = 5;
    public static final long WINDOW_SECONDS = 60;
    private static final long WINDOW_NANOS = TimeUnit.SECONDS.toNanos(WINDOW_SECONDS);

    private final Logger log;
    private final LongSupplier nanoClock;
    /** Runs {@link #flush} when a window with unlogged lines ends; null: only the next line of the kind does. */
    private final GlobalEventExecutor flusher;
    private final Map<String, Window> windows = new HashMap<>(); // guarded by this

    private static final class Window {
        final long startNanos;
        int logged;
        int unlogged;
        Level level = Level.FINEST;

        Window(long startNanos) {
            this.startNanos = startNanos;
        }
    }

    /** Windows by the wall clock; a summary is logged when a window with unlogged lines ends, even if none follow. */
    public LogLimiter(Logger log) {
        this(log, System::nanoTime, GlobalEventExecutor.INSTANCE);
    }

    /** For tests: their own clock, and no timer (they call {@link #flush}). */
    LogLimiter(Logger log, LongSupplier nanoClock) {
        this(log, nanoClock, null);
    }

    private LogLimiter(Logger log, LongSupplier nanoClock, GlobalEventExecutor flusher) {
        this.log = log;
        this.nanoClock = nanoClock;
        this.flusher = flusher;
    }

    /**
     * Logs {@code message} unless {@link #LINES_PER_WINDOW} lines of {@code kind} were logged in this window already.
     * {@code kind} is a fixed text, never one with an address or other peer-chosen part (each kind keeps a window), and
     * the summary's subject: "KIND: N more not logged in the last 60 s".
     */
    public void log(Level level, String kind, String message) {
        if (!log.isLoggable(level)) return;
        Window previous = null;
        boolean logIt;
        long flushInNanos = -1;
        long now = nanoClock.getAsLong();
        synchronized (this) {
            Window w = windows.get(kind);
            if (w != null && now - w.startNanos >= WINDOW_NANOS) previous = windows.remove(kind);
            w = windows.computeIfAbsent(kind, k -> new Window(now));
            logIt = w.logged < LINES_PER_WINDOW;
            if (logIt) {
                w.logged++;
            } else {
                if (w.unlogged++ == 0) flushInNanos = w.startNanos + WINDOW_NANOS - now;
                if (level.intValue() > w.level.intValue()) w.level = level;
            }
        }
        if (previous != null) logSummary(kind, previous);
        if (logIt) log.log(level, message);
        if (flushInNanos >= 0 && flusher != null) {
            flusher.schedule(this::flush, flushInNanos, TimeUnit.NANOSECONDS);
        }
    }

    /** Logs the summary of every window that has ended with lines unlogged, and forgets the ended windows. */
    public void flush() {
        long now = nanoClock.getAsLong();
        Map<String, Window> ended = new HashMap<>();
        synchronized (this) {
            windows.entrySet().removeIf(e -> {
                if (now - e.getValue().startNanos < WINDOW_NANOS) return false;
                ended.put(e.getKey(), e.getValue());
                return true;
            });
        }
        ended.forEach(this::logSummary);
    }

    private void logSummary(String kind, Window w) {
        if (w.unlogged == 0) return;
        log.log(w.level, kind + ": " + w.unlogged + " more not logged in the last " + WINDOW_SECONDS + " s (at most "
                + LINES_PER_WINDOW + " lines of a kind are logged per " + WINDOW_SECONDS + " s)");
    }
}
