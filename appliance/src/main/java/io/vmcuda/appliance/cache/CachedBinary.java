package io.vmcuda.appliance.cache;

import java.nio.file.Path;

/**
 * A cache entry: where the original and the rewritten executable lie, and their sizes. A session that
 * ships no executable (the driver front end's) runs the plain worker instead: {@link #plainWorker}.
 */
public record CachedBinary(String sha256, String name, Path original, Path rewritten,
                           long originalBytes, long rewrittenBytes) {
    /** The appliance's own vmcuda-worker, for sessions without a shipped executable (sha256 empty). */
    public static CachedBinary plainWorker(Path executable) {
        return new CachedBinary("", "vmcuda-worker", executable, executable, 0, 0);
    }

    public boolean isPlainWorker() {
        return sha256.isEmpty();
    }
}
