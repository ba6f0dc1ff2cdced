package io.vmcuda.appliance.control;

import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.handler.codec.DecoderException;
import io.vmcuda.appliance.cache.BinaryRefusedException;
import io.vmcuda.appliance.cache.BinaryUpload;
import io.vmcuda.appliance.cache.CachedBinary;
import io.vmcuda.appliance.session.SessionManager;
import io.vmcuda.appliance.session.SetupTimings;
import io.vmcuda.appliance.wire.Frame;
import io.vmcuda.appliance.wire.Frames;
import io.vmcuda.appliance.wire.Hello;
import io.vmcuda.appliance.wire.HelloReply;
import io.vmcuda.appliance.wire.ProtocolException;
import io.vmcuda.protocol.Wire;
import java.io.IOException;
import java.nio.file.Path;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * One client connection on the control port, up to the point where a session takes it over:
 * HELLO → (SEND_BINARY → BINARY_CHUNK... → verify → check + rewrite) → {@link SessionManager}.
 * Runs on the connection's event loop; cache look-ups and rewriting run on the blocking executor and
 * come back to the event loop. The client must stay silent while the daemon works (PROTOCOL.md step 3),
 * so any frame outside the expected phase is a protocol error.
 */
final class ControlHandler extends SimpleChannelInboundHandler<Frame> {
    private static final Logger LOG = Logger.getLogger(ControlHandler.class.getName());

    private enum Phase { AWAIT_HELLO, UPLOADING, BUSY }

    private final ControlContext ctxShared;
    private Phase phase = Phase.AWAIT_HELLO;
    private Hello hello;
    private BinaryUpload upload;
    private long uploadStartNanos;

    ControlHandler(ControlContext shared) {
        this.ctxShared = shared;
    }

    @Override
    protected void channelRead0(ChannelHandlerContext ctx, Frame frame) throws IOException {
        switch (phase) {
            case AWAIT_HELLO:
                expect(frame, Wire.TYPE_HELLO, "HELLO");
                onHello(ctx, Hello.parse(frame.payload()));
                break;
            case UPLOADING:
                expect(frame, Wire.TYPE_BINARY_CHUNK, "BINARY_CHUNK");
                onChunk(ctx, frame);
                break;
            default:
                throw new ProtocolException(ProtocolException.UNEXPECTED,
                        "frame type " + frame.type() + " sent before the daemon replied");
        }
    }

    private static void expect(Frame f, int type, String name) {
        if (f.type() != type) {
            throw new ProtocolException(ProtocolException.UNEXPECTED, "expected " + name + ", got frame type " + f.type());
        }
    }

    private void onHello(ChannelHandlerContext ctx, Hello h) throws IOException {
        hello = h;
        phase = Phase.BUSY;
        if (h.protoVersion() != Wire.PROTO_VERSION) {
            refuse(ctx, "protocol version " + h.protoVersion() + ", appliance speaks " + Wire.PROTO_VERSION);
            return;
        }
        // token: parsed above and not checked yet (authentication comes with its own issue)
        if (h.role() == Wire.ROLE_JOIN) {
            ctxShared.sessions().join(ctx.channel(), h.sessionId(), h.sessionKey());
            return;
        }
        if (h.role() != Wire.ROLE_NEW) {
            refuse(ctx, "unknown HELLO role " + h.role());
            return;
        }
        long max = ctxShared.binaryMaxBytes();
        if (h.binarySize() <= 0 || h.binarySize() > max) {
            refuse(ctx, "binary size " + Long.toUnsignedString(h.binarySize()) + " bytes outside 1.." + max
                    + " (appliance setting binary.max_bytes)");
            return;
        }
        String sha = h.sha256Hex();
        ctxShared.blocking().execute(() -> {
            Optional<CachedBinary> hit = ctxShared.cache().lookup(sha);
            ctx.executor().execute(() -> afterLookup(ctx, hit));
        });
    }

    private void afterLookup(ChannelHandlerContext ctx, Optional<CachedBinary> hit) {
        if (!ctx.channel().isActive()) return;
        if (hit.isPresent()) {
            openSession(ctx, hit.get(), SetupTimings.cacheHit());
            return;
        }
        try {
            upload = new BinaryUpload(ctxShared.cache().uploadDir(), hello.binarySize(), hello.sha256());
        } catch (IOException e) {
            LOG.log(Level.WARNING, "cannot create an upload file", e);
            refuse(ctx, "appliance cannot store the binary: " + e.getMessage());
            return;
        }
        phase = Phase.UPLOADING;
        uploadStartNanos = System.nanoTime();
        ctx.writeAndFlush(Frames.helloReply(ctx.alloc(), HelloReply.sendBinary()));
    }

    private void onChunk(ChannelHandlerContext ctx, Frame frame) throws IOException {
        boolean complete;
        Path file;
        try {
            complete = upload.append(frame.payload());
            if (!complete) return;
            file = upload.finish();
        } catch (BinaryRefusedException e) {
            refuse(ctx, e.getMessage());
            return;
        }
        phase = Phase.BUSY;
        long uploadMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - uploadStartNanos);
        String sha = hello.sha256Hex();
        String name = hello.name();
        ctxShared.blocking().execute(() -> {
            long t0 = System.nanoTime();
            try {
                CachedBinary b = ctxShared.cache().admit(sha, name, file);
                long rewriteMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
                ctx.executor().execute(() -> openSession(ctx, b, new SetupTimings(false, uploadMs, rewriteMs)));
            } catch (BinaryRefusedException e) {
                ctx.executor().execute(() -> refuse(ctx, e.getMessage()));
            } catch (IOException | RuntimeException e) {
                LOG.log(Level.WARNING, "admitting " + sha + " failed", e);
                ctx.executor().execute(() -> refuse(ctx, "appliance could not rewrite the binary: " + e));
            }
        });
    }

    private void openSession(ChannelHandlerContext ctx, CachedBinary binary, SetupTimings timings) {
        if (!ctx.channel().isActive()) return;
        long wanted = hello.gpusWanted() == 0 ? 1 : hello.gpusWanted(); // 0 means "the default", one GPU
        ctxShared.sessions().openNew(ctx.channel(), hello.name(), binary, (int) Math.min(wanted, Integer.MAX_VALUE), timings);
    }

    private void refuse(ChannelHandlerContext ctx, String why) {
        phase = Phase.BUSY;
        closeUpload();
        ctxShared.refusals().refuse(ctx.channel(), why);
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
        Throwable c = cause instanceof DecoderException && cause.getCause() != null ? cause.getCause() : cause;
        closeUpload();
        if (c instanceof ProtocolException) {
            ProtocolException pe = (ProtocolException) c;
            LOG.info("protocol error from " + ctx.channel().remoteAddress() + ": " + pe.getMessage());
            phase = Phase.BUSY;
            ctx.channel().config().setAutoRead(false); // nothing more from this peer is worth reading
            ctx.writeAndFlush(Frames.error(ctx.alloc(), pe.code(), pe.getMessage()))
                    .addListener(ChannelFutureListener.CLOSE);
            return;
        }
        if (c instanceof IOException) {
            LOG.fine("connection " + ctx.channel().remoteAddress() + ": " + c.getMessage());
        } else {
            LOG.log(Level.WARNING, "connection " + ctx.channel().remoteAddress() + " failed", c);
        }
        ctx.close();
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) throws Exception {
        closeUpload();
        super.channelInactive(ctx);
    }

    private void closeUpload() {
        if (upload != null) {
            upload.close();
            upload = null;
        }
    }
}
