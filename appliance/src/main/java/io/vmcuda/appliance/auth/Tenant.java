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
 */
public record Tenant(String name, byte[] tokenSha256, int maxSessions, int maxGpus, long maxMemoryBytes,
                     java.util.List<java.nio.file.Path> shmRegions) {
    /** The tenant of every client when no tenants are configured (open loopback appliance). */
    public static final Tenant ANONYMOUS = new Tenant("anonymous", new byte[0], 0, 0, 0, java.util.List.of());

    public Tenant(String name, byte[] tokenSha256, int maxSessions, int maxGpus, long maxMemoryBytes) {
        this(name, tokenSha256, maxSessions, maxGpus, maxMemoryBytes, java.util.List.of());
    }
}
