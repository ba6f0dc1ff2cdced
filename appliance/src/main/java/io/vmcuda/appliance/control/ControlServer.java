package io.vmcuda.appliance.control;

import io.netty.bootstrap.ServerBootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.epoll.EpollServerSocketChannel;
import io.netty.channel.epoll.EpollSocketChannel;
import io.vmcuda.appliance.cache.BinaryCache;
import io.vmcuda.appliance.session.Refusals;
import io.vmcuda.appliance.session.SessionManager;
import io.vmcuda.appliance.session.TenantConnections;
import io.vmcuda.appliance.wire.FrameDecoder;
import io.vmcuda.appliance.wire.UnfinishedFrames;
import java.net.InetSocketAddress;
import java.util.concurrent.Executor;

/** The client-facing TCP port (--listen): session setup per PROTOCOL.md, then hand-off to a worker. */
public final class ControlServer implements AutoCloseable {
    /** Socket buffer for client connections: they carry bulk memcpy data once handed to a worker. */
    private static final int BULK_SOCKET_BUFFER = 8 << 20;

    private final Channel server;

    public ControlServer(InetSocketAddress listen, EventLoopGroup boss, EventLoopGroup workers, BinaryCache cache,
                         SessionManager sessions, Refusals refusals, Executor blocking, long binaryMaxBytes)
            throws InterruptedException {
        this(listen, boss, workers, cache, sessions, refusals, blocking, binaryMaxBytes,
                new io.vmcuda.appliance.auth.Authenticator(java.util.List.of()), java.time.Duration.ofSeconds(30));
    }

    public ControlServer(InetSocketAddress listen, EventLoopGroup boss, EventLoopGroup workers, BinaryCache cache,
                         SessionManager sessions, Refusals refusals, Executor blocking, long binaryMaxBytes,
                         io.vmcuda.appliance.auth.Authenticator auth, java.time.Duration handshakeTimeout)
            throws InterruptedException {
        this(listen, boss, workers, cache, sessions, refusals, blocking, binaryMaxBytes, auth, handshakeTimeout,
                new io.vmcuda.appliance.auth.AuthThrottle(0), Integer.MAX_VALUE, Integer.MAX_VALUE,
                TenantConnections.unlimited(), null, null, null, UnfinishedFrames.unlimited());
    }

    /**
     * @param throttle               control.auth_failures_per_minute
     * @param maxHandshakes          control.max_handshakes: connections awaiting their HELLO, in all
     * @param maxHandshakesPerSource control.max_handshakes_per_source: the same per client address
     * @param connections            each tenant's cap on open connections (tenant.NAME.max_connections)
     * @param pool                   the pool this appliance answers placements for; null when not in one
     * @param tenantView             a tenant's view of the appliance by tenant name (`vmcuda smi`); null: refused
     * @param tls                    TLS on every connection (control.tls_certificate); null: none
     * @param unfinishedFrames       the bytes of frames received in part that all connections may hold
     *                               (control.max_unfinished_frame_bytes)
     */
    public ControlServer(InetSocketAddress listen, EventLoopGroup boss, EventLoopGroup workers, BinaryCache cache,
                         SessionManager sessions, Refusals refusals, Executor blocking, long binaryMaxBytes,
                         io.vmcuda.appliance.auth.Authenticator auth, java.time.Duration handshakeTimeout,
                         io.vmcuda.appliance.auth.AuthThrottle throttle, int maxHandshakes, int maxHandshakesPerSource,
                         TenantConnections connections, io.vmcuda.appliance.pool.Pool pool,
                         java.util.function.Function<String, String> tenantView, ControlTls tls,
                         UnfinishedFrames unfinishedFrames) throws InterruptedException {
        ControlContext shared = new ControlContext(cache, sessions, refusals, blocking, binaryMaxBytes, auth,
                handshakeTimeout, throttle, new PendingHandshakes(maxHandshakes, maxHandshakesPerSource), connections, pool,
                tenantView, ControlContext.newLimitedLog());
        this.server = new ServerBootstrap()
                .group(boss, workers)
                .channel(EpollServerSocketChannel.class)
                .option(ChannelOption.SO_REUSEADDR, true)
                // Set on the listening socket so that accepted connections negotiate a TCP window scale
                // large enough for the worker's bulk copies (buffers set after the handshake cannot).
                .option(ChannelOption.SO_RCVBUF, BULK_SOCKET_BUFFER)
                // the worker inherits these settings with the socket: the data path wants them
                .childOption(ChannelOption.TCP_NODELAY, true)
                .childOption(ChannelOption.SO_SNDBUF, BULK_SOCKET_BUFFER)
                .childHandler(new ChannelInitializer<EpollSocketChannel>() {
                    @Override
                    protected void initChannel(EpollSocketChannel ch) {
                        ControlHandler handler = new ControlHandler(shared);
                        // the decoder asks the handler at each header whether its phase takes the frame, so that
                        // nothing is buffered for a frame that would be refused anyway
                        ch.pipeline().addLast(new FrameDecoder(unfinishedFrames, handler::checkFrameType), handler);
                        if (tls != null) tls.install(ch);
                    }
                })
                .bind(listen).sync().channel();
    }

    public InetSocketAddress localAddress() {
        return (InetSocketAddress) server.localAddress();
    }

    /** Stops accepting; connections already handed to workers are not the daemon's any more. */
    @Override
    public void close() {
        server.close().syncUninterruptibly();
    }
}
