package io.vmcuda.appliance.worker;

import io.netty.channel.Channel;

/** What a worker tells the daemon over its Unix connection (PROTOCOL.md "Worker ↔ daemon"). */
public interface WorkerEvents {
    /**
     * The worker's {@code WORKER <id> <key>} line. Returns false when the id is unknown, the key is wrong
     * or the session already has its worker; the connection is then closed.
     */
    boolean workerConnected(long sessionId, String keyHex, Channel channel);

    /**
     * A {@code STATS <bytes_h2d> <bytes_d2h> <calls> [<call_ns> <bucket>...]} line: running totals of the session;
     * {@code latency} is null from a worker that does not time its calls.
     */
    void workerStats(long sessionId, long bytesH2d, long bytesD2h, long calls,
                     io.vmcuda.appliance.session.CallLatency latency);

    /** A {@code BYE <exit_status>} line. */
    void workerBye(long sessionId, int exitStatus);

    /** An {@code EXIT <status>} line: the client program's exit status (0-255), which its client reported. */
    default void programExit(long sessionId, int status) {}

    /** An {@code ABORT <reason>} line: the session ends abnormally (client lost mid-call, idle release...). */
    default void workerAbort(long sessionId, String reason) {}

    /**
     * A {@code MODULE? <sha256> <size>} line: does the daemon's module cache hold that image for the session's
     * tenant? The answer ({@link ModuleReplies}) goes back on {@code worker}. Without a module cache: no.
     */
    default void workerModuleQuery(long sessionId, String sha256, long size, Channel worker) {
        ModuleReplies.answer(worker, sha256, false);
    }
}
