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
        return new Reservation(tenant, bytes);
    }

    private synchronized void release(String tenant, long bytes) {
        long left = reserved.getOrDefault(tenant, 0L) - bytes;
        if (left > 0) reserved.put(tenant, left);
        else reserved.remove(tenant);
    }

    /** The bytes {@code tenant}'s uploads in progress hold now. */
    public synchronized long reservedBy(String tenant) {
        return reserved.getOrDefault(tenant, 0L);
    }

    /** One upload's share; given back once, by whichever of the upload's end or hand-over comes first. */
    final class Reservation implements AutoCloseable {
        private final String tenant;
        private final long bytes;
        private boolean released;

        private Reservation(String tenant, long bytes) {
            this.tenant = tenant;
            this.bytes = bytes;
        }

        @Override
        public synchronized void close() {
            if (released) return;
            released = true;
            release(tenant, bytes);
        }
    }
}
