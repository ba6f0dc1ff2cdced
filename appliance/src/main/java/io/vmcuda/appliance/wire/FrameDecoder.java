package io.vmcuda.appliance.wire;

import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.codec.ByteToMessageDecoder;
import io.vmcuda.protocol.Wire;
import java.util.List;

/**
 * Splits the control port's byte stream into {@link Frame}s. The header is judged as soon as its 16 bytes are in,
 * before any payload is kept: magic, known type, a type a client sends to the daemon, the type's own length limit
 * ({@link Wire#maxPayload}), and (with a {@link TypeCheck}) whether the connection takes that type now. A violation
 * throws {@link ProtocolException}, which the connection's handler turns into ERROR + close.
 *
 * <p>What stays in memory per connection is small and bounded. BINARY_CHUNK payload is passed on in parts as it
 * arrives (the handler writes each part to the upload file), never gathered: gathering it held up to 4 MiB (an
 * 8 MiB buffer) per connection for as long as the client took to send it, and a tenant's connections slowly
 * sending chunks ran the daemon out of direct memory. Other frames a client sends (HELLO, LIBRARIES) are at most
 * 64 KiB; one over {@link #UNCOUNTED_FRAME_BYTES} received in part is counted against the port's
 * {@link UnfinishedFrames} budget and refused (ERROR 7) when the budget is spent.
 */
public final class FrameDecoder extends ByteToMessageDecoder {
    /** Decides from a frame's type alone whether the connection takes it now; throws ProtocolException if not. */
    @FunctionalInterface
    public interface TypeCheck {
        void check(int type);
    }

    /**
     * Frames up to this size are not counted in the budget, so that a peer who spends it cannot get other clients'
     * handshakes refused: a real HELLO is about 130 bytes plus the program's name and CUDA_VISIBLE_DEVICES (at most
     * 1 KiB), and may arrive in two reads (a header written apart from its payload). What such frames hold is bounded
     * by the caps on connections: control.max_handshakes before HELLO, tenant.NAME.max_connections after.
     */
    public static final int UNCOUNTED_FRAME_BYTES = 4096;

    private final UnfinishedFrames budget;
    private final TypeCheck typeCheck;
    /** After a violation the stream has no trustworthy frame boundary left: ignore the rest until close. */
    private boolean failed;
    /** The header of the frame being received, or -1 for type when between frames. */
    private int type = -1;
    private int flags;
    private long id;
    private long length;
    /** BINARY_CHUNK: payload bytes passed on so far. */
    private long passedOn;
    /** Bytes of the current frame counted in {@link #budget}: 0, or its length while it is received in part. */
    private long held;
    /** The connection has closed: nothing more is held. */
    private boolean closing;

    /** A decoder with no budget and no check by phase: tests (the handler still checks each frame). */
    public FrameDecoder() {
        this(UnfinishedFrames.unlimited(), t -> { });
    }

    public FrameDecoder(UnfinishedFrames budget, TypeCheck typeCheck) {
        this.budget = budget;
        this.typeCheck = typeCheck;
    }

    @Override
    protected void decode(ChannelHandlerContext ctx, ByteBuf in, List<Object> out) {
        if (failed) {
            in.skipBytes(in.readableBytes());
            return;
        }
        if (type < 0) {
            if (in.readableBytes() < Wire.HEADER_BYTES) return;
            readHeader(in);
        }
        if (type == Wire.TYPE_BINARY_CHUNK) {
            int n = (int) Math.min(in.readableBytes(), length - passedOn);
            if (n == 0 && length > 0) return; // an empty chunk is passed on (once), for the handler to refuse
            out.add(new Frame(type, flags, id, in.readRetainedSlice(n), length, passedOn));
            passedOn += n;
            if (passedOn == length) type = -1;
            return;
        }
        if (in.readableBytes() < length) {
            holdUnfinished();
            return;
        }
        out.add(new Frame(type, flags, id, in.readRetainedSlice((int) length)));
        type = -1;
        releaseHeld();
    }

    private void readHeader(ByteBuf in) {
        failed = true; // cleared below once the header has passed every check
        int magic = in.getIntLE(in.readerIndex());
        if (magic != Wire.MAGIC) {
            throw new ProtocolException(ProtocolException.BAD_MAGIC,
                    String.format("bad frame magic 0x%08x (expected 0x%08x)", magic, Wire.MAGIC));
        }
        int t = in.getUnsignedShortLE(in.readerIndex() + 4);
        int max = Wire.maxPayload(t);
        if (max < 0) throw new ProtocolException(ProtocolException.UNKNOWN_TYPE, "unknown frame type " + t);
        if (t != Wire.TYPE_HELLO && t != Wire.TYPE_BINARY_CHUNK && t != Wire.TYPE_LIBRARIES) {
            // CALL (1 MiB) and the like go to a worker or come from one: never a client's to send here
            throw new ProtocolException(ProtocolException.UNEXPECTED,
                    "frame type " + t + " is not one a client sends to the daemon's control port");
        }
        long len = in.getUnsignedIntLE(in.readerIndex() + Wire.LENGTH_FIELD_OFFSET);
        if (len > max) {
            throw new ProtocolException(ProtocolException.TOO_LONG,
                    "frame type " + t + " length " + len + " over its limit of " + max);
        }
        typeCheck.check(t);
        failed = false;
        type = t;
        flags = in.getUnsignedShortLE(in.readerIndex() + 6);
        id = in.getUnsignedIntLE(in.readerIndex() + 8);
        length = len;
        passedOn = 0;
        in.skipBytes(Wire.HEADER_BYTES);
    }

    /** The frame's payload is not all here: its bytes count against the port's budget until it is, or the connection ends. */
    private void holdUnfinished() {
        if (held > 0 || closing || length <= UNCOUNTED_FRAME_BYTES) return;
        if (!budget.tryHold(length)) {
            failed = true;
            throw new ProtocolException(ProtocolException.TOO_MANY, "the appliance holds " + budget.heldBytes()
                    + " bytes of frames that clients sent only in part, its limit (appliance setting "
                    + "control.max_unfinished_frame_bytes = " + budget.maxBytes() + "): try again");
        }
        held = length;
    }

    private void releaseHeld() {
        if (held > 0) budget.release(held);
        held = 0;
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) throws Exception {
        closing = true; // the decoding of what is left that super does now must not take budget again
        try {
            super.channelInactive(ctx);
        } finally {
            releaseHeld();
        }
    }

    @Override
    protected void handlerRemoved0(ChannelHandlerContext ctx) {
        releaseHeld();
    }
}
