package io.vmcuda.appliance;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.time.Instant;
import java.time.ZoneId;
import java.time.format.DateTimeFormatter;
import java.util.logging.ConsoleHandler;
import java.util.logging.Formatter;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;

/**
 * {@code 2026-01-02T03:04:05.678 INFO  [Logger] message} on one line; a stack trace only when one is logged.
 * Messages carry what tenants chose (program names, paths, worker output): control characters in them are
 * written escaped ({@code \n}, {@code \x1b}...), so that no tenant can forge a line of the log.
 */
public final class OneLineLogFormatter extends Formatter {
    private static final DateTimeFormatter TIME =
            DateTimeFormatter.ofPattern("yyyy-MM-dd'T'HH:mm:ss.SSS").withZone(ZoneId.systemDefault());

    /** Whether each line starts with its sd-daemon priority ({@code <3>} ...), which journald reads and strips. */
    private final boolean journald;

    /** Lines for journald when systemd connected stderr to it (it sets JOURNAL_STREAM), plain lines otherwise. */
    public OneLineLogFormatter() {
        this(System.getenv("JOURNAL_STREAM") != null);
    }

    OneLineLogFormatter(boolean journald) {
        this.journald = journald;
    }

    @Override
    public String format(LogRecord r) {
        String logger = r.getLoggerName() == null ? "" : r.getLoggerName();
        logger = logger.substring(logger.lastIndexOf('.') + 1);
        StringBuilder s = new StringBuilder(160);
        if (journald) s.append('<').append(LogLevel.syslogPriority(r.getLevel())).append('>');
        s.append(TIME.format(Instant.ofEpochMilli(r.getMillis()))).append(' ')
                .append(String.format("%-7s", r.getLevel().getName())).append('[').append(logger).append("] ")
                .append(escaped(formatMessage(r))).append('\n');
        if (r.getThrown() != null) {
            StringWriter w = new StringWriter();
            r.getThrown().printStackTrace(new PrintWriter(w));
            s.append(w);
        }
        return s.toString();
    }

    /** The text with every control character (line breaks, escape sequences, DEL) written as an escape. */
    static String escaped(String text) {
        StringBuilder out = null;
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            boolean control = c < 0x20 || c == 0x7f || (c >= 0x80 && c < 0xa0) || c == '\u2028' || c == '\u2029';
            if (control && out == null) out = new StringBuilder(text.length() + 16).append(text, 0, i);
            if (out == null) continue;
            if (!control) out.append(c);
            else if (c == '\n') out.append("\\n");
            else if (c == '\r') out.append("\\r");
            else if (c == '\t') out.append("\\t");
            else out.append(String.format("\\x%02x", (int) c & 0xffff));
        }
        return out == null ? text : out.toString();
    }

    /** Routes all java.util.logging output to stderr through this formatter. */
    public static void install() {
        Logger root = Logger.getLogger("");
        for (Handler old : root.getHandlers()) root.removeHandler(old);
        Handler h = new ConsoleHandler(); // ConsoleHandler writes to System.err
        h.setFormatter(new OneLineLogFormatter());
        h.setLevel(Level.ALL);
        root.addHandler(h);
        root.setLevel(Level.INFO);
    }

    /** The daemon's level from now on (LogLevel). */
    static void setLevel(Level level) {
        Logger.getLogger("").setLevel(level);
    }
}
