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
import java.net.InetSocketAddress;

/** The admin HTTP port (--admin): status and metrics, read-only, behind {@link AdminAccess}. */
public final class AdminServer implements AutoCloseable {
    /** Requests are bodiless GETs; anything bigger is not for us. */
    private static final int MAX_REQUEST_BYTES = 16 * 1024;

    private final Channel server;

    public AdminServer(InetSocketAddress listen, EventLoopGroup group, StatusSource src, AdminAccess access)
            throws InterruptedException {
        PrometheusMetrics metrics = new PrometheusMetrics(src); // one registry for every connection
        this.server = new ServerBootstrap()
                .group(group)
                .channel(EpollServerSocketChannel.class)
                .option(ChannelOption.SO_REUSEADDR, true)
                .childHandler(new ChannelInitializer<EpollSocketChannel>() {
                    @Override
                    protected void initChannel(EpollSocketChannel ch) {
                        ch.pipeline().addLast(new HttpServerCodec(), new HttpObjectAggregator(MAX_REQUEST_BYTES),
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
