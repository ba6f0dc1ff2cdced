package io.vmcuda.appliance.wire;

import java.util.concurrent.atomic.AtomicLong;

/**
 * The bytes of control frames (HELLO, LIBRARIES: at most 64 KiB each) that the daemon holds received in part, across
 * every connection of the control port ({@code control.max_unfinished_frame_bytes}). A frame that arrives whole is
 * decoded at once and never counted, nor is a small one (FrameDecoder.UNCOUNTED_FRAME_BYTES: every real HELLO);
 * BINARY_CHUNK payload is passed on as it arrives and never held (FrameDecoder).
 * What is left is a peer that announces a frame and sends it slowly, on many connections: without this bound
 * 4096 connections awaiting their HELLO (control.max_handshakes) could hold 64 KiB each, and before chunks were
 * streamed 250 connections of one tenant holding a part of a 4 MiB chunk took 2.3 GiB and ran the daemon out of
 * direct memory, starving every other tenant's handshake. A frame that would go over the budget is refused (ERROR 7)
 * and its connection closed; nobody waits on it.
 */
public final class UnfinishedFrames {
    private final long maxBytes;
    private final AtomicLong held = new AtomicLong();

    public UnfinishedFrames(long maxBytes) {
        this.maxBytes = maxBytes;
    }

    /** No bound: for tests and embedded pipelines that build their own. */
    public static UnfinishedFrames unlimited() {
        return new UnfinishedFrames(Long.MAX_VALUE);
    }

    /** Counts {@code bytes} more when they fit; false (nothing counted) when they would go over the budget. */
    boolean tryHold(long bytes) {
        while (true) {
            long now = held.get();
            if (bytes > maxBytes - now) return false;
            if (held.compareAndSet(now, now + bytes)) return true;
        }
    }

    void release(long bytes) {
        held.addAndGet(-bytes);
    }

    /** Bytes counted now. */
    public long heldBytes() {
        return held.get();
    }

    public long maxBytes() {
        return maxBytes;
    }
}
