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
    /** Any peer can be refused once per connection it opens (a bad token, a throttled address): see LogLimiter. */
    private final io.vmcuda.appliance.LogLimiter limitedLog = new io.vmcuda.appliance.LogLimiter(LOG);

    public Refusals(DaemonMetrics metrics) {
        this.metrics = metrics;
    }

    public DaemonMetrics metrics() {
        return metrics;
    }

    public void refuse(Channel ch, String why) {
        refuse(ch, why, true);
    }

    /**
     * As above; with {@code log} false the refusal is logged only at FINE: for refusals that come in bursts
     * and are logged once per burst by whoever decides them (a tenant at its connection cap).
     */
    public void refuse(Channel ch, String why, boolean log) {
        metrics.refused();
        if (log) limitedLog.log(java.util.logging.Level.INFO, "refused HELLOs", "refused " + ch.remoteAddress() + ": " + why);
        else LOG.fine("refused " + ch.remoteAddress() + ": " + why);
        if (!ch.isActive()) return;
        ch.writeAndFlush(Frames.helloReply(ch.alloc(), HelloReply.refused(why)))
                .addListener(ChannelFutureListener.CLOSE);
    }
}
