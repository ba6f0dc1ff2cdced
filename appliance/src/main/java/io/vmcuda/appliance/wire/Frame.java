package io.vmcuda.appliance.wire;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.DefaultByteBufHolder;

/** One decoded frame (PROTOCOL.md "Frames"): header fields plus the payload, which the holder releases. */
public final class Frame extends DefaultByteBufHolder {
    private final int type;
    private final int flags;
    private final long id;

    public Frame(int type, int flags, long id, ByteBuf payload) {
        super(payload);
        this.type = type;
        this.flags = flags;
        this.id = id;
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

    public ByteBuf payload() {
        return content();
    }
}
