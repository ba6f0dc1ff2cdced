package io.vmcuda.appliance;

import java.util.logging.LogManager;

/**
 * The JDK's LogManager resets (closes) all handlers from its own shutdown hook, which races with the
 * daemon's shutdown hook: the lines saying which sessions were stopped would be lost. This manager ignores
 * reset(); the process is exiting anyway, and ConsoleHandler holds nothing that needs closing.
 * Selected with -Djava.util.logging.manager (set by {@link Vmcudad#main} before the first log call).
 */
public final class ShutdownSafeLogManager extends LogManager {
    @Override
    public void reset() {
        // deliberately nothing: see the class comment
    }
}
