package io.vmcuda.appliance;

import java.util.ArrayList;
import java.util.List;
import java.util.logging.Handler;
import java.util.logging.LogRecord;
import java.util.logging.Logger;

/** What one class's logger publishes while a test runs: {@code try (CapturedLog log = new CapturedLog(X.class)) {...}}. */
public final class CapturedLog extends Handler implements AutoCloseable {
    private final Logger logger;
    private final List<LogRecord> records = new ArrayList<>();

    public CapturedLog(Class<?> source) {
        logger = Logger.getLogger(source.getName());
        logger.addHandler(this);
    }

    @Override
    public synchronized void publish(LogRecord r) {
        records.add(r);
    }

    @Override
    public void flush() {}

    /** Stops capturing; what was captured stays readable. */
    @Override
    public void close() {
        logger.removeHandler(this);
    }

    public synchronized List<LogRecord> records() {
        return List.copyOf(records);
    }
}
