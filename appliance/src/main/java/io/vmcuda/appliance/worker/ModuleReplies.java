package io.vmcuda.appliance.worker;

import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import java.nio.charset.StandardCharsets;

/** The daemon's answer to a worker's {@code MODULE?} line: {@code M <sha256> 1|0} (PROTOCOL.md "Worker ↔ daemon"). */
public final class ModuleReplies {
    private ModuleReplies() {}

    /** @param lent whether the image now lies in the session's lend directory */
    public static void answer(Channel worker, String sha256, boolean lent) {
        worker.writeAndFlush(Unpooled.copiedBuffer("M " + sha256 + (lent ? " 1\n" : " 0\n"), StandardCharsets.US_ASCII));
    }
}
