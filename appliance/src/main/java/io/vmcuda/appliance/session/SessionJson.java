package io.vmcuda.appliance.session;

import io.vmcuda.appliance.JsonWriter;

/** JSON pieces shared by /status and sessions.jsonl. */
public final class SessionJson {
    private SessionJson() {}

    /**
     * {@code "worker": "program"|"plain", "cache_hit": .., "setup_ms": {"upload": .., "rewrite": ..,
     * "worker_start": ..}} (-1 = not run; "plain": the session shipped no executable).
     */
    public static void setup(JsonWriter w, SetupTimings t) {
        w.field("worker", t.isPlainWorker() ? "plain" : "program")
                .name("cache_hit").value(t.isCacheHit())
                .name("setup_ms").beginObject()
                .field("upload", t.uploadMs())
                .field("rewrite", t.rewriteMs())
                .field("worker_start", t.workerStartMs())
                .endObject();
    }
}
