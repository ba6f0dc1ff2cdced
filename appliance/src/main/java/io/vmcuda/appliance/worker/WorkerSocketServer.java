package io.vmcuda.appliance.worker;

import io.netty.bootstrap.ServerBootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.epoll.EpollDomainSocketChannel;
import io.netty.channel.epoll.EpollServerDomainSocketChannel;
import io.netty.channel.unix.DomainSocketAddress;
import io.netty.handler.codec.LineBasedFrameDecoder;
import io.netty.handler.codec.string.StringDecoder;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;

/**
 * The appliance-internal Unix socket ({@code <state>/run/worker.sock}) that workers connect back to.
 * Its directory is 0700, so only the daemon's user reaches it; the per-session key does the rest.
 */
public final class WorkerSocketServer implements AutoCloseable {
    /** Longest line a worker sends (WORKER with a 64-digit key is about 90 bytes). */
    private static final int MAX_LINE = 512;
    /** sockaddr_un.sun_path is 108 bytes on Linux, including the terminating NUL. */
    private static final int MAX_SUN_PATH = 107;

    private final Path socketPath;
    private final Channel server;

    public WorkerSocketServer(Path socketPath, EventLoopGroup group, WorkerEvents events)
            throws IOException, InterruptedException {
        this.socketPath = socketPath;
        if (socketPath.toString().getBytes(java.nio.charset.StandardCharsets.UTF_8).length > MAX_SUN_PATH) {
            throw new IllegalArgumentException("worker socket path " + socketPath + " is longer than the "
                    + MAX_SUN_PATH + " bytes a Unix socket address holds; use a shorter --state-dir");
        }
        Path dir = socketPath.getParent();
        Files.createDirectories(dir);
        Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwx------"));
        Files.deleteIfExists(socketPath); // left by a daemon that was killed
        this.server = new ServerBootstrap()
                .group(group)
                .channel(EpollServerDomainSocketChannel.class)
                .childHandler(new ChannelInitializer<EpollDomainSocketChannel>() {
                    @Override
                    protected void initChannel(EpollDomainSocketChannel ch) {
                        ch.pipeline().addLast(new LineBasedFrameDecoder(MAX_LINE),
                                new StringDecoder(StandardCharsets.US_ASCII), new WorkerLineHandler(events));
                    }
                })
                .bind(new DomainSocketAddress(socketPath.toFile())).sync().channel();
    }

    public Path socketPath() {
        return socketPath;
    }

    @Override
    public void close() {
        server.close().syncUninterruptibly();
        try {
            Files.deleteIfExists(socketPath);
        } catch (IOException e) {
            // a stale socket file is replaced at the next start
        }
    }
}
