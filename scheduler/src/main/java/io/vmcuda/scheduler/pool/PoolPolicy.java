package io.vmcuda.scheduler.pool;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Optional;

/**
 * Which appliance and GPUs of a pool a new session goes to (cluster.policy). Every policy first keeps the
 * appliances that are not draining and have enough GPUs with a free slot that match the request; they
 * differ in the order of those candidates. On one appliance the GPUs are taken as its own scheduler would
 * (least loaded first, or fullest first for pack).
 */
public enum PoolPolicy {
    /**
     * Fewest sessions on the GPUs it would get (in all, then on the busiest of them), then on the whole
     * appliance, then least memory in use.
     */
    LEAST_LOADED("least-loaded"),
    /** Fullest first: fill one appliance's GPUs before using the next (leaves whole appliances idle). */
    PACK("pack"),
    /** An appliance that offers the shared-memory path to the client's host first, least loaded among them. */
    LOCALITY("locality");

    private final String configName;

    PoolPolicy(String configName) {
        this.configName = configName;
    }

    public String configName() {
        return configName;
    }

    public static PoolPolicy parse(String name) {
        String n = name.trim().toLowerCase(Locale.ROOT);
        for (PoolPolicy p : values()) {
            if (p.configName.equals(n)) return p;
        }
        throw new IllegalArgumentException("unknown cluster.policy '" + name + "' (expected least-loaded, pack or locality)");
    }

    /** The choice for the request, or empty when no appliance can take it now. */
    public Optional<PoolChoice> choose(List<PoolAppliance> pool, PoolRequest request) {
        List<PoolChoice> candidates = new ArrayList<>();
        for (PoolAppliance a : pool) {
            if (a.draining()) continue;
            List<PoolGpu> free = new ArrayList<>();
            for (PoolGpu g : a.gpus()) {
                if (g.sessions() < a.slotsPerGpu() && request.accepts(g)) free.add(g);
            }
            if (free.size() < request.gpus()) continue;
            free.sort(this == PACK ? FULLEST_GPU_FIRST : EMPTIEST_GPU_FIRST);
            candidates.add(new PoolChoice(a, List.copyOf(free.subList(0, request.gpus()))));
        }
        return candidates.stream().min(order(request));
    }

    private static final Comparator<PoolGpu> EMPTIEST_GPU_FIRST =
            Comparator.comparingInt(PoolGpu::sessions).thenComparingLong(PoolGpu::memoryUsedOrZero);
    private static final Comparator<PoolGpu> FULLEST_GPU_FIRST =
            Comparator.comparingInt(PoolGpu::sessions).reversed().thenComparingLong(PoolGpu::memoryUsedOrZero);

    private static int chosenSessions(PoolChoice c) {
        return c.gpus().stream().mapToInt(PoolGpu::sessions).sum();
    }

    private static long chosenMemory(PoolChoice c) {
        return c.gpus().stream().mapToLong(PoolGpu::memoryUsedOrZero).sum();
    }

    private Comparator<PoolChoice> order(PoolRequest request) {
        Comparator<PoolChoice> leastLoaded = Comparator.comparingInt(PoolPolicy::chosenSessions)
                .thenComparingInt(c -> c.gpus().stream().mapToInt(PoolGpu::sessions).max().orElse(0))
                .thenComparingInt(c -> c.appliance().sessions())
                .thenComparingLong(PoolPolicy::chosenMemory)
                .thenComparing(c -> c.appliance().name());
        return switch (this) {
            case LEAST_LOADED -> leastLoaded;
            case PACK -> Comparator.comparingInt(PoolPolicy::chosenSessions).reversed()
                    .thenComparing(Comparator.comparingInt((PoolChoice c) -> c.appliance().sessions()).reversed())
                    .thenComparing(c -> c.appliance().name());
            case LOCALITY -> Comparator.comparing((PoolChoice c) ->
                            !c.appliance().shmHosts().contains(request.clientHost()) || request.clientHost().isEmpty())
                    .thenComparing(leastLoaded);
        };
    }
}
