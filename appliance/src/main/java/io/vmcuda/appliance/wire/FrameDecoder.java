package io.vmcuda.appliance.wire;

import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.codec.LengthFieldBasedFrameDecoder;
import io.vmcuda.protocol.Wire;
import java.nio.ByteOrder;

/**
 * Splits the byte stream into {@link Frame}s. The header is validated as soon as its 16 bytes are in,
 * before any payload is accumulated: magic, known type, and the type's own length limit
 * ({@link Wire#maxPayload}). A violation throws {@link ProtocolException}, which the connection's handler
 * turns into ERROR + close.
 */
public final class FrameDecoder extends LengthFieldBasedFrameDecoder {
    /** After a violation the stream has no trustworthy frame boundary left: ignore the rest until close. */
    private boolean failed;

    public FrameDecoder() {
        super(ByteOrder.LITTLE_ENDIAN, Wire.HEADER_BYTES + Wire.MAX_BINARY_CHUNK,
                Wire.LENGTH_FIELD_OFFSET, Wire.LENGTH_FIELD_BYTES, 0, 0, true);
    }

    @Override
    protected long getUnadjustedFrameLength(ByteBuf buf, int lengthFieldOffset, int length, ByteOrder order) {
        failed = true; // cleared below once the header has passed every check
        int header = lengthFieldOffset - Wire.LENGTH_FIELD_OFFSET;
        int magic = buf.getIntLE(header);
        if (magic != Wire.MAGIC) {
            throw new ProtocolException(ProtocolException.BAD_MAGIC,
                    String.format("bad frame magic 0x%08x (expected 0x%08x)", magic, Wire.MAGIC));
        }
        int type = buf.getUnsignedShortLE(header + 4);
        int max = Wire.maxPayload(type);
        if (max < 0) throw new ProtocolException(ProtocolException.UNKNOWN_TYPE, "unknown frame type " + type);
        long len = buf.getUnsignedIntLE(lengthFieldOffset);
        if (len > max) {
            throw new ProtocolException(ProtocolException.TOO_LONG,
                    "frame type " + type + " length " + len + " over its limit of " + max);
        }
        failed = false;
        return len;
    }

    @Override
    protected Object decode(ChannelHandlerContext ctx, ByteBuf in) throws Exception {
        if (failed) {
            in.skipBytes(in.readableBytes());
            return null;
        }
        ByteBuf whole = (ByteBuf) super.decode(ctx, in);
        if (whole == null) return null;
        try {
            int type = whole.getUnsignedShortLE(4);
            int flags = whole.getUnsignedShortLE(6);
            long id = whole.getUnsignedIntLE(8);
            ByteBuf payload = whole.retainedSlice(Wire.HEADER_BYTES, whole.readableBytes() - Wire.HEADER_BYTES);
            return new Frame(type, flags, id, payload);
        } finally {
            whole.release();
        }
    }
}
