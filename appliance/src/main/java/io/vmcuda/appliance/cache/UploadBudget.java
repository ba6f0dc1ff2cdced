package io.vmcuda.appliance.cache;

import java.util.HashMap;
import java.util.Map;

/**
 * What each tenant's uploads in progress (executables and client libraries arriving in BINARY_CHUNK frames, each
 * in a file of its own below the cache's {@code .uploads}) may hold of the state disk together:
 * {@code cache.tenant_upload_bytes}. An upload reserves the size its client announced when it starts, and gives it
 * back when its file is handed over or dropped. Without it a tenant could open as many uploads as it had connections
 * (256 by default, each up to binary.max_bytes) and trickle bytes into them to keep them open: an attack filled the
 * state disk that way and the next tenant's program could not be stored. The reservation counts announced bytes, not
 * received ones, so that one tenant's slow uploads cost only its own budget.
 */
public final class UploadBudget {
    private final long perTenantBytes;
    private final Map<String, Long> reserved = new HashMap<>();
    /** Every upload in progress: what they announced and have not written yet is free space already promised. */
    private final java.util.Set<Reservation> live = new java.util.HashSet<>();

    /** @param perTenantBytes what one tenant's uploads in progress may announce together; 0 = no limit */
    public UploadBudget(long perTenantBytes) {
        this.perTenantBytes = perTenantBytes;
    }

    /** {@code bytes} for one upload of {@code tenant}'s, or the reason it must wait for others to end. */
    synchronized Reservation reserve(String tenant, long bytes) throws BinaryRefusedException {
        long now = reserved.getOrDefault(tenant, 0L);
        if (perTenantBytes > 0 && now + bytes > perTenantBytes) {
            throw new BinaryRefusedException("tenant '" + tenant + "' has uploads of " + now + " bytes in progress; another "
                    + bytes + " would pass its limit of " + perTenantBytes + " (appliance setting cache.tenant_upload_bytes): "
                    + "try again once they have ended");
        }
        reserved.put(tenant, now + bytes);
        Reservation r = new Reservation(tenant, bytes);
        live.add(r);
        return r;
    }

    private synchronized void release(Reservation r) {
        live.remove(r);
        long left = reserved.getOrDefault(r.tenant, 0L) - r.bytes;
        if (left > 0) reserved.put(r.tenant, left);
        else reserved.remove(r.tenant);
    }

    /**
     * The bytes uploads in progress announced and have not written yet: the state disk's free space must hold them
     * besides a new upload, or uploads that each fit the free space alone together overflow it (an attack
     * announced exactly the free space, sent nearly all of it and then a byte every few seconds).
     */
    synchronized long unwritten() {
        long sum = 0;
        for (Reservation r : live) sum += Math.max(0, r.bytes - r.written);
        return sum;
    }

    /** The bytes {@code tenant}'s uploads in progress hold now. */
    public synchronized long reservedBy(String tenant) {
        return reserved.getOrDefault(tenant, 0L);
    }

    /** One upload's share; given back once, by whichever of the upload's end or hand-over comes first. */
    final class Reservation implements AutoCloseable {
        private final String tenant;
        private final long bytes;
        private volatile long written;
        private boolean released;

        private Reservation(String tenant, long bytes) {
            this.tenant = tenant;
            this.bytes = bytes;
        }

        /** The upload has written {@code n} more bytes of what it announced. */
        void wrote(long n) {
            written += n;
        }

        @Override
        public void close() {
            synchronized (this) {
                if (released) return;
                released = true;
            }
            release(this);
        }
    }
}
