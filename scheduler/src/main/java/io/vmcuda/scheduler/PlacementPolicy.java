package io.vmcuda.scheduler;

import java.util.Comparator;
import java.util.Locale;

/**
 * Which free GPUs a request gets. Each policy is an order over the GPUs that still have a free slot;
 * a request for k GPUs takes the first k.
 */
public enum PlacementPolicy {
    /** Fewest active sessions, then least memory in use, so a new session lands where it competes least. */
    LEAST_LOADED("least-loaded", Comparator.comparingInt(GpuLoad::activeSessions)
            .thenComparingLong(GpuLoad::memoryUsedOrZero)
            .thenComparingInt(GpuLoad::index)),
    /** Most active sessions first: fill one GPU to its limit before using the next (leaves whole GPUs idle). */
    PACK("pack", Comparator.comparingInt(GpuLoad::activeSessions).reversed()
            .thenComparingInt(GpuLoad::index)),
    /** Fewest active sessions, ties to the GPU used longest ago: round-robin across GPUs. */
    SPREAD("spread", Comparator.comparingInt(GpuLoad::activeSessions)
            .thenComparingLong(GpuLoad::lastAssignedSeq)
            .thenComparingInt(GpuLoad::index));

    private final String configName;
    private final Comparator<GpuLoad> order;

    PlacementPolicy(String configName, Comparator<GpuLoad> order) {
        this.configName = configName;
        this.order = order;
    }

    public String configName() {
        return configName;
    }

    Comparator<GpuLoad> order() {
        return order;
    }

    /** Parses {@code least-loaded}, {@code pack} or {@code spread} (case-insensitive). */
    public static PlacementPolicy parse(String name) {
        String n = name.trim().toLowerCase(Locale.ROOT);
        for (PlacementPolicy p : values()) {
            if (p.configName.equals(n)) return p;
        }
        throw new IllegalArgumentException(
                "unknown scheduler.policy '" + name + "' (expected least-loaded, pack or spread)");
    }

    /**
     * What a policy sees of one GPU. {@code memoryUsedBytes} is -1 when unknown;
     * {@code lastAssignedSeq} grows with each assignment (0 = never assigned).
     */
    record GpuLoad(int index, int activeSessions, long memoryUsedBytes, long lastAssignedSeq) {
        long memoryUsedOrZero() {
            return Math.max(0, memoryUsedBytes);
        }
    }
}
