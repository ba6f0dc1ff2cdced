package io.vmcuda.scheduler;

import java.time.Duration;

/** Scheduler settings (from the appliance config keys scheduler.*). */
public record SchedulerConfig(PlacementPolicy policy, int maxSessionsPerGpu, Duration queueTimeout) {
    public static final int DEFAULT_MAX_SESSIONS_PER_GPU = 16;
    public static final Duration DEFAULT_QUEUE_TIMEOUT = Duration.ofSeconds(30);

    public SchedulerConfig {
        if (maxSessionsPerGpu < 1) throw new IllegalArgumentException("max sessions per GPU must be >= 1");
        if (queueTimeout.isNegative()) throw new IllegalArgumentException("queue timeout must be >= 0");
    }

    public static SchedulerConfig defaults() {
        return new SchedulerConfig(PlacementPolicy.LEAST_LOADED, DEFAULT_MAX_SESSIONS_PER_GPU, DEFAULT_QUEUE_TIMEOUT);
    }
}
