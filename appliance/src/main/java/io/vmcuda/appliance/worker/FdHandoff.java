package io.vmcuda.appliance.worker;

import io.netty.buffer.ByteBuf;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.epoll.EpollSocketChannel;
import io.netty.channel.unix.FileDescriptor;
import io.netty.buffer.Unpooled;
import io.vmcuda.appliance.control.ControlTls;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.CompletableFuture;

/**
 * Gives one accepted client TCP connection to a worker (PROTOCOL.md "Worker ↔ daemon"), in this order:
 * <ol>
 * <li>write HELLO_REPLY READY on the TCP connection and wait until it is written, so the client's first
 *     byte from the worker cannot overtake it;</li>
 * <li>with TLS, end the daemon's TLS without a word (ControlTls.leave): the worker and the client open their own;</li>
 * <li>stop reading (autoRead off) and deregister the channel from its event loop, so that no daemon
 *     thread reads or polls the socket once the worker owns it (the client sends nothing before the
 *     MANIFEST anyway, PROTOCOL.md step 3, so no byte can be stranded in the daemon);</li>
 * <li>send the socket's fd over the worker's Unix connection (SCM_RIGHTS; the kernel dups it into the
 *     worker), after the line with its TLS link's key when it has one;</li>
 * <li>close the daemon's copy. close(2) of one of two descriptors of a socket does not end the
 *     connection; shutdown(2) would, and Netty's close does not call it (the hand-off test checks that
 *     the client still talks to the worker after this step).</li>
 * </ol>
 */
public final class FdHandoff {
    private FdHandoff() {}

    /**
     * Completes when the daemon's copy is closed; exceptionally if any step fails (the TCP side is closed then).
     * {@code linkKey}: the key READY carried for the connection's TLS link to the worker, or null without TLS.
     */
    public static CompletableFuture<Void> handOff(Channel tcp, ByteBuf readyReply, Channel worker, byte[] linkKey) {
        CompletableFuture<Void> done = new CompletableFuture<>();
        if (!(tcp instanceof EpollSocketChannel)) {
            readyReply.release();
            done.completeExceptionally(new IllegalStateException("hand-off needs the epoll transport, got "
                    + tcp.getClass().getSimpleName()));
            return done;
        }
        tcp.writeAndFlush(readyReply).addListener((ChannelFuture written) -> {
            if (!written.isSuccess()) {
                fail(done, tcp, "writing READY failed", written.cause());
                return;
            }
            tcp.config().setAutoRead(false);
            ControlTls.leave(tcp);
            tcp.deregister().addListener((ChannelFuture deregistered) -> {
                if (!deregistered.isSuccess()) {
                    fail(done, tcp, "deregistering the client channel failed", deregistered.cause());
                    return;
                }
                int fd = ((EpollSocketChannel) tcp).fd().intValue();
                if (linkKey != null) worker.write(Unpooled.copiedBuffer(ControlTls.linkLine(linkKey), StandardCharsets.US_ASCII));
                worker.writeAndFlush(new FileDescriptor(fd)).addListener((ChannelFuture sent) -> {
                    // the worker holds its own descriptor now (or never will): either way the daemon's goes
                    tcp.close().addListener(closed -> {
                        if (sent.isSuccess()) done.complete(null);
                        else done.completeExceptionally(new IllegalStateException(
                                "sending the client socket to the worker failed", sent.cause()));
                    });
                });
            });
        });
        return done;
    }

    private static void fail(CompletableFuture<Void> done, Channel tcp, String what, Throwable cause) {
        tcp.close();
        done.completeExceptionally(new IllegalStateException(what, cause));
    }
}
