package io.vmcuda.appliance.session;

/**
 * How long each setup phase of a session took, in milliseconds (-1 = phase not run): the binary upload
 * (cache miss only), check + rewrite (cache miss only), and worker start (fork until its WORKER line).
 * A plain session (no shipped executable) has only the worker start.
 */
public final class SetupTimings {
    private final boolean plain;
    private final boolean cacheHit;
    private final long uploadMs;
    private final long rewriteMs;
    private volatile long workerStartMs = -1;

    public SetupTimings(boolean cacheHit, long uploadMs, long rewriteMs) {
        this(false, cacheHit, uploadMs, rewriteMs);
    }

    private SetupTimings(boolean plain, boolean cacheHit, long uploadMs, long rewriteMs) {
        this.plain = plain;
        this.cacheHit = cacheHit;
        this.uploadMs = uploadMs;
        this.rewriteMs = rewriteMs;
    }

    public static SetupTimings cacheHit() {
        return new SetupTimings(true, -1, -1);
    }

    /** A session that shipped no executable: the plain worker serves it. */
    public static SetupTimings plainWorker() {
        return new SetupTimings(true, false, -1, -1);
    }

    public boolean isPlainWorker() {
        return plain;
    }

    public boolean isCacheHit() {
        return cacheHit;
    }

    public long uploadMs() {
        return uploadMs;
    }

    public long rewriteMs() {
        return rewriteMs;
    }

    public long workerStartMs() {
        return workerStartMs;
    }

    void workerStarted(long ms) {
        workerStartMs = ms;
    }

    @Override
    public String toString() {
        return (plain ? "plain worker" : cacheHit ? "cache hit" : "upload " + uploadMs + " ms, rewrite " + rewriteMs + " ms")
                + ", worker start " + workerStartMs + " ms";
    }
}
