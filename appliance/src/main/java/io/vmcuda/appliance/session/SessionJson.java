package io.vmcuda.appliance.session;

import io.vmcuda.appliance.JsonWriter;

/** JSON pieces shared by /status and sessions.jsonl. */
public final class SessionJson {
    private SessionJson() {}

    /** {@code "cache_hit": .., "setup_ms": {"upload": .., "rewrite": .., "worker_start": ..}} (-1 = not run). */
    public static void setup(JsonWriter w, SetupTimings t) {
        w.name("cache_hit").value(t.isCacheHit())
                .name("setup_ms").beginObject()
                .field("upload", t.uploadMs())
                .field("rewrite", t.rewriteMs())
                .field("worker_start", t.workerStartMs())
                .endObject();
    }
}
