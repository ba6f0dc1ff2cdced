package io.vmcuda.appliance.wire;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.DefaultByteBufHolder;

/**
 * One decoded frame (PROTOCOL.md "Frames"): header fields plus the payload, which the holder releases. A BINARY_CHUNK
 * arrives in parts, each with the bytes that came so far (FrameDecoder streams them rather than holding up to 4 MiB per
 * connection): {@link #length()} is the whole frame's announced payload, {@link #offset()} where this part starts in
 * it. Every other frame is one part holding its whole payload.
 */
public final class Frame extends DefaultByteBufHolder {
    private final int type;
    private final int flags;
    private final long id;
    private final long length;
    private final long offset;
    /** Where this part ends in the payload: fixed at decoding, whoever reads the bytes later. */
    private final long end;

    /** A whole frame. */
    public Frame(int type, int flags, long id, ByteBuf payload) {
        this(type, flags, id, payload, payload.readableBytes(), 0);
    }

    /** The part of a frame of {@code length} payload bytes that starts at {@code offset}. */
    public Frame(int type, int flags, long id, ByteBuf part, long length, long offset) {
        super(part);
        this.type = type;
        this.flags = flags;
        this.id = id;
        this.length = length;
        this.offset = offset;
        this.end = offset + part.readableBytes();
    }

    public int type() {
        return type;
    }

    public int flags() {
        return flags;
    }

    public long id() {
        return id;
    }

    /** This part's bytes (the whole payload of a frame that is not a BINARY_CHUNK). */
    public ByteBuf payload() {
        return content();
    }

    /** The payload bytes the frame's header announced. */
    public long length() {
        return length;
    }

    public long offset() {
        return offset;
    }

    public boolean firstPart() {
        return offset == 0;
    }

    public boolean lastPart() {
        return end == length;
    }
}
