package io.vmcuda.appliance.pool;

import io.vmcuda.scheduler.pool.PoolAppliance;
import io.vmcuda.scheduler.pool.PoolGpu;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * An appliance's registration in the pool: the JSON value of {@code appliances/NAME} (snake_case keys).
 * Written by the appliance every cluster.refresh_s and when its load changes; read by placements and by
 * {@code vmcuda cluster}.
 *
 * @param sessions      sessions running (or starting) on it
 * @param slotsPerGpu   its scheduler.max_sessions_per_gpu
 * @param updatedMs     when it wrote this (epoch ms)
 */
public record ApplianceRecord(String name, String endpoint, String version, List<String> shmHosts, int slotsPerGpu,
                              int sessions, boolean draining, long updatedMs, String noGpuReason, List<Gpu> gpus) {

    /**
     * @param memoryUsed   bytes in use (-1: unknown)
     * @param utilization  percent (-1: unknown)
     */
    public record Gpu(int index, String uuid, String name, long memoryTotal, String computeCapability, int sessions,
                      long memoryUsed, int utilization) {}

    /** As placement sees it, with the slots that tickets promise on its GPUs counted as taken. */
    PoolAppliance toPool(Map<String, Integer> ticketsPerGpu) {
        java.util.Objects.requireNonNull(name, "name");
        java.util.Objects.requireNonNull(endpoint, "endpoint");
        for (Gpu x : gpus) {
            java.util.Objects.requireNonNull(x.uuid(), "gpu uuid");
            java.util.Objects.requireNonNull(x.name(), "gpu name");
        }
        List<PoolGpu> g = gpus.stream().map(x -> new PoolGpu(x.uuid(), x.name(), x.memoryTotal(), x.computeCapability(),
                x.sessions() + ticketsPerGpu.getOrDefault(x.uuid(), 0), x.memoryUsed())).toList();
        return new PoolAppliance(name, endpoint, Set.copyOf(shmHosts), slotsPerGpu, draining, g);
    }
}
