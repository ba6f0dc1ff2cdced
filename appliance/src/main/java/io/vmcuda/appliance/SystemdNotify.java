package io.vmcuda.appliance;

import io.netty.bootstrap.Bootstrap;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.epoll.EpollDomainDatagramChannel;
import io.netty.channel.unix.DomainSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.logging.Logger;

/**
 * The service manager's notification protocol (sd_notify(3)): under systemd with {@code Type=notify} the daemon
 * says READY=1 once its ports listen, RELOADING=1 and READY=1 around a configuration reload, STOPPING=1 when it
 * starts to drain, and a STATUS= line for {@code systemctl status}. Datagrams to {@code $NOTIFY_SOCKET}; without
 * it (not under systemd) nothing is sent. Only socket paths are supported, not the abstract namespace ('@').
 */
final class SystemdNotify implements AutoCloseable {
    private static final Logger LOG = Logger.getLogger(SystemdNotify.class.getName());
    private final Channel channel; // connected to $NOTIFY_SOCKET, or null

    private SystemdNotify(Channel channel) {
        this.channel = channel;
    }

    static SystemdNotify fromEnvironment(EventLoopGroup group, String notifySocket) {
        if (notifySocket == null || notifySocket.isEmpty()) return new SystemdNotify(null);
        if (!notifySocket.startsWith("/")) {
            LOG.warning("NOTIFY_SOCKET " + notifySocket + " is not a path (abstract sockets are not supported): "
                    + "the service manager is not told when the daemon is ready");
            return new SystemdNotify(null);
        }
        try {
            Channel ch = new Bootstrap().group(group).channel(EpollDomainDatagramChannel.class)
                    .handler(new ChannelInboundHandlerAdapter()).connect(new DomainSocketAddress(notifySocket)).sync().channel();
            return new SystemdNotify(ch);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return new SystemdNotify(null);
        } catch (Exception e) { // the native transport's IOExceptions come through sync() unchecked
            LOG.warning("cannot open a socket to NOTIFY_SOCKET " + notifySocket + ": " + e);
            return new SystemdNotify(null);
        }
    }

    void ready(String status) {
        send("READY=1\nSTATUS=" + status);
    }

    void reloading() {
        // systemd 253+ wants the time of the reload with it (MONOTONIC_USEC); older ones ignore the field
        send("RELOADING=1\nMONOTONIC_USEC=" + System.nanoTime() / 1000);
    }

    void stopping(String status) {
        send("STOPPING=1\nSTATUS=" + status);
    }

    private void send(String message) {
        if (channel == null) return;
        try {
            channel.writeAndFlush(Unpooled.copiedBuffer(message, StandardCharsets.UTF_8)).sync();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (RuntimeException e) {
            LOG.warning("cannot notify the service manager (" + message.replace('\n', ' ') + "): " + e);
        }
    }

    @Override
    public void close() {
        if (channel != null) channel.close();
    }
}
