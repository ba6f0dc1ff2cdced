package io.vmcuda.appliance.auth;

/**
 * A tenant of the appliance (CONFIG.md "Tenants and tokens"): who a token belongs to and what one of its
 * sessions may use. A limit of 0 means "no limit".
 *
 * @param maxSessions    concurrent sessions (starting or running) of this tenant
 * @param maxGpus        GPUs one session may ask for
 * @param maxMemoryBytes device memory one session may allocate (enforced by the worker, VMCUDA_MEMORY_QUOTA)
 * @param shmRegions     shared-memory regions (e.g. the ivshmem BAR of this tenant's client VM) only this
 *                       tenant's workers get, besides the appliance-wide shm.regions
 * @param gpuSharePercent the share of the appliance's GPU slots this tenant's sessions may hold at once,
 *                       1..100; 0: scheduler.tenant_gpu_share
 */
public record Tenant(String name, byte[] tokenSha256, int maxSessions, int maxGpus, long maxMemoryBytes,
                     java.util.List<java.nio.file.Path> shmRegions, int gpuSharePercent) {
    /** The tenant of every client when no tenants are configured (open loopback appliance). */
    public static final Tenant ANONYMOUS = new Tenant("anonymous", new byte[0], 0, 0, 0, java.util.List.of(), 100);

    public Tenant(String name, byte[] tokenSha256, int maxSessions, int maxGpus, long maxMemoryBytes) {
        this(name, tokenSha256, maxSessions, maxGpus, maxMemoryBytes, java.util.List.of(), 0);
    }

    /**
     * The GPU slots (one GPU of one session) this tenant's sessions may hold at once, of {@code totalSlots}:
     * its share, else {@code defaultPercent}, rounded down but at least 1; 0 (no cap) at 100 %.
     */
    public int gpuSlots(int totalSlots, int defaultPercent) {
        int percent = gpuSharePercent > 0 ? gpuSharePercent : defaultPercent;
        return percent >= 100 ? 0 : Math.max(1, (int) ((long) totalSlots * percent / 100));
    }
}
