package io.vmcuda.appliance.session;

import io.netty.channel.Channel;
import io.netty.channel.ChannelFutureListener;
import io.vmcuda.appliance.wire.Frames;
import io.vmcuda.appliance.wire.HelloReply;
import java.util.logging.Logger;

/** Sends HELLO_REPLY REFUSED, counts it, and closes the connection (PROTOCOL.md step 2). */
public final class Refusals {
    private static final Logger LOG = Logger.getLogger(Refusals.class.getName());

    private final DaemonMetrics metrics;

    public Refusals(DaemonMetrics metrics) {
        this.metrics = metrics;
    }

    public DaemonMetrics metrics() {
        return metrics;
    }

    public void refuse(Channel ch, String why) {
        metrics.refused();
        LOG.info("refused " + ch.remoteAddress() + ": " + why);
        if (!ch.isActive()) return;
        ch.writeAndFlush(Frames.helloReply(ch.alloc(), HelloReply.refused(why)))
                .addListener(ChannelFutureListener.CLOSE);
    }
}
