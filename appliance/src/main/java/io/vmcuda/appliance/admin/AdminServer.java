package io.vmcuda.appliance.admin;

import io.netty.bootstrap.ServerBootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.epoll.EpollServerSocketChannel;
import io.netty.channel.epoll.EpollSocketChannel;
import io.netty.handler.codec.http.HttpObjectAggregator;
import io.netty.handler.codec.http.HttpServerCodec;
import io.netty.handler.timeout.IdleStateHandler;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * The admin HTTP port (--admin): status and metrics, read-only, behind {@link AdminAccess}. Anyone who reaches the port
 * can open connections before any token is checked, so they are bounded: a connection that has not sent a complete
 * request for {@link #IDLE_TIMEOUT} (since it connected or since its last answer) is closed, and past
 * {@link #MAX_CONNECTIONS} open at once, or {@link #MAX_PER_ADDRESS} from one address, a new one is closed as it comes.
 * Without these, idle connections held open by the thousand took every descriptor of the daemon, and its client port
 * stopped accepting; without the second, one host could hold every place and keep the operator's monitors out.
 */
public final class AdminServer implements AutoCloseable {
    private static final Logger LOG = Logger.getLogger(AdminServer.class.getName());
    /** Requests are bodiless GETs; anything bigger is not for us. */
    private static final int MAX_REQUEST_BYTES = 16 * 1024;
    /**
     * HTTP/1.1 keep-alive: a scraper's next request comes within its interval or on a new connection (Prometheus and
     * curl reconnect by themselves). Counted between complete requests, so a request sent a byte at a time ends too.
     */
    static final Duration IDLE_TIMEOUT = Duration.ofSeconds(30);
    /** Far more than the monitors and operators of one appliance use; far fewer than the daemon's descriptors. */
    static final int MAX_CONNECTIONS = 64;
    /** A monitor and an operator's shell or two per host; the rest of the places stay for other hosts. */
    static final int MAX_PER_ADDRESS = 8;

    private final Channel server;
    private final AtomicInteger open = new AtomicInteger();
    private final java.util.concurrent.ConcurrentHashMap<java.net.InetAddress, Integer> openFrom =
            new java.util.concurrent.ConcurrentHashMap<>();
    private final io.vmcuda.appliance.LogLimiter limitedLog = new io.vmcuda.appliance.LogLimiter(LOG);

    public AdminServer(InetSocketAddress listen, EventLoopGroup group, StatusSource src, AdminAccess access)
            throws InterruptedException {
        this(listen, group, src, access, IDLE_TIMEOUT, MAX_CONNECTIONS, MAX_PER_ADDRESS);
    }

    AdminServer(InetSocketAddress listen, EventLoopGroup group, StatusSource src, AdminAccess access, Duration idleTimeout,
                int maxConnections, int maxPerAddress) throws InterruptedException {
        PrometheusMetrics metrics = new PrometheusMetrics(src); // one registry for every connection
        this.server = new ServerBootstrap()
                .group(group)
                .channel(EpollServerSocketChannel.class)
                .option(ChannelOption.SO_REUSEADDR, true)
                .childHandler(new ChannelInitializer<EpollSocketChannel>() {
                    @Override
                    protected void initChannel(EpollSocketChannel ch) {
                        java.net.InetAddress from = ch.remoteAddress().getAddress();
                        int fromThere = openFrom.merge(from, 1, Integer::sum);
                        int all = open.incrementAndGet();
                        ch.closeFuture().addListener(f -> {
                            open.decrementAndGet();
                            openFrom.computeIfPresent(from, (k, n) -> n > 1 ? n - 1 : null);
                        });
                        if (all > maxConnections || fromThere > maxPerAddress) {
                            limitedLog.log(Level.WARNING, "admin connections closed at the cap", "closing admin connection from "
                                    + ch.remoteAddress() + ": " + (all > maxConnections ? maxConnections + " admin connections are"
                                    : maxPerAddress + " admin connections from that address are") + " open already");
                            ch.close();
                            return;
                        }
                        // after the aggregator: only a complete request counts as reading
                        ch.pipeline().addLast(new HttpServerCodec(), new HttpObjectAggregator(MAX_REQUEST_BYTES),
                                new IdleStateHandler(idleTimeout.toNanos(), 0, 0, TimeUnit.NANOSECONDS),
                                new AdminHandler(src, access, metrics));
                    }
                })
                .bind(listen).sync().channel();
    }

    public InetSocketAddress localAddress() {
        return (InetSocketAddress) server.localAddress();
    }

    @Override
    public void close() {
        server.close().syncUninterruptibly();
    }
}
