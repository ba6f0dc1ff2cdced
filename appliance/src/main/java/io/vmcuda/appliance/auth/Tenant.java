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
 * @param maxConnections open client connections of all this tenant's sessions together (NEW and JOIN);
 *                       0: no limit; {@link #DEFAULT_CONNECTIONS}: control.tenant_max_connections
 */
public record Tenant(String name, byte[] tokenSha256, int maxSessions, int maxGpus, long maxMemoryBytes,
                     java.util.List<java.nio.file.Path> shmRegions, int gpuSharePercent, int maxConnections) {
    /** {@link #maxConnections} when tenant.NAME.max_connections is not set: the appliance-wide default applies. */
    public static final int DEFAULT_CONNECTIONS = -1;

    /**
     * The tenant of every client when no tenants are configured (open loopback appliance). Its connections
     * are capped by control.tenant_max_connections like a tenant's: one runaway program must not take every
     * descriptor of the appliance there either.
     */
    public static final Tenant ANONYMOUS = new Tenant("anonymous", new byte[0], 0, 0, 0, java.util.List.of(), 100,
            DEFAULT_CONNECTIONS);

    public Tenant(String name, byte[] tokenSha256, int maxSessions, int maxGpus, long maxMemoryBytes) {
        this(name, tokenSha256, maxSessions, maxGpus, maxMemoryBytes, java.util.List.of(), 0, DEFAULT_CONNECTIONS);
    }

    /** The cap on this tenant's open connections: its own, else {@code defaultCap}; 0 = no cap. */
    public int connectionCap(int defaultCap) {
        return maxConnections == DEFAULT_CONNECTIONS ? defaultCap : maxConnections;
    }

    /** True when the cap comes from tenant.NAME.max_connections rather than the appliance-wide default. */
    public boolean ownConnectionCap() {
        return maxConnections != DEFAULT_CONNECTIONS;
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
