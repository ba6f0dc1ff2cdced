package io.vmcuda.scheduler.pool;

/**
 * One GPU of an appliance in the pool, as placement sees it.
 *
 * @param sessions    sessions bound to it now, plus placements promised to it that its appliance has not yet
 *                    taken up (their tickets)
 * @param memoryUsed  bytes in use on it (-1: unknown)
 */
public record PoolGpu(String uuid, String name, long memoryTotal, String computeCapability, int sessions, long memoryUsed) {
    long memoryUsedOrZero() {
        return Math.max(0, memoryUsed);
    }
}
