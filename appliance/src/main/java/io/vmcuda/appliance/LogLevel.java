package io.vmcuda.appliance;

import java.util.Locale;
import java.util.logging.Level;

/**
 * The daemon's log levels by the names operators use (--log-level, log.level): error, warn, info, debug, mapped
 * onto java.util.logging's, and the syslog priority each has for journald.
 */
final class LogLevel {
    private LogLevel() {}

    /** The java.util.logging level for a name; IllegalArgumentException naming the choices otherwise. */
    static Level parse(String name) {
        switch (name.strip().toLowerCase(Locale.ROOT)) {
            case "error": return Level.SEVERE;
            case "warn": case "warning": return Level.WARNING;
            case "info": return Level.INFO;
            case "debug": return Level.FINE;
            default: throw new IllegalArgumentException("log level '" + name + "' is not one of error, warn, info, debug");
        }
    }

    /** sd-daemon(3) priority of a record's level: 3 error, 4 warning, 6 info, 7 debug. */
    static int syslogPriority(Level level) {
        int v = level.intValue();
        if (v >= Level.SEVERE.intValue()) return 3;
        if (v >= Level.WARNING.intValue()) return 4;
        if (v >= Level.INFO.intValue()) return 6;
        return 7;
    }
}
