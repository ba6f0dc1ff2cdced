package io.vmcuda.appliance.wire;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.handler.codec.DecoderException;
import io.vmcuda.protocol.Wire;
import org.junit.jupiter.api.Test;

class FrameDecoderTest {
    private static ByteBuf header(int magic, int type, int flags, long id, long len) {
        ByteBuf b = Unpooled.buffer();
        b.writeIntLE(magic).writeShortLE(type).writeShortLE(flags).writeIntLE((int) id).writeIntLE((int) len);
        return b;
    }

    @Test
    void decodesAFrameSplitAcrossReads() {
        EmbeddedChannel ch = new EmbeddedChannel(new FrameDecoder());
        ByteBuf h = header(Wire.MAGIC, Wire.TYPE_HELLO, 3, 42, 5);
        ch.writeInbound(h.readRetainedSlice(10));
        ch.writeInbound(h.readRetainedSlice(6));
        h.release();
        assertNull(ch.readInbound(), "no frame before its payload");
        ch.writeInbound(Unpooled.wrappedBuffer(new byte[] {1, 2, 3, 4, 5}));
        Frame f = ch.readInbound();
        assertEquals(Wire.TYPE_HELLO, f.type());
        assertEquals(3, f.flags());
        assertEquals(42, f.id());
        assertEquals(5, f.payload().readableBytes());
        f.release();
        ch.finishAndReleaseAll();
    }

    private static ProtocolException rejected(ByteBuf input) {
        EmbeddedChannel ch = new EmbeddedChannel(new FrameDecoder());
        DecoderException e = assertThrows(DecoderException.class, () -> ch.writeInbound(input));
        ch.finishAndReleaseAll();
        return assertInstanceOf(ProtocolException.class, e.getCause());
    }

    @Test
    void badMagic() {
        assertEquals(ProtocolException.BAD_MAGIC, rejected(header(0x0BADF00D, Wire.TYPE_HELLO, 0, 0, 0)).code());
    }

    @Test
    void unknownType() {
        assertEquals(ProtocolException.UNKNOWN_TYPE, rejected(header(Wire.MAGIC, 0, 0, 0, 0)).code());
        assertEquals(ProtocolException.UNKNOWN_TYPE, rejected(header(Wire.MAGIC, Wire.TYPE_LIBRARIES + 1, 0, 0, 0)).code());
        assertEquals(ProtocolException.UNKNOWN_TYPE, rejected(header(Wire.MAGIC, 0xFFFF, 0, 0, 0)).code());
    }

    @Test
    void perTypeLimitsApplyBeforeThePayloadIsBuffered() {
        assertEquals(ProtocolException.TOO_LONG,
                rejected(header(Wire.MAGIC, Wire.TYPE_HELLO, 0, 0, Wire.MAX_CONTROL_PAYLOAD + 1)).code());
        assertEquals(ProtocolException.TOO_LONG,
                rejected(header(Wire.MAGIC, Wire.TYPE_BINARY_CHUNK, 0, 0, Wire.MAX_BINARY_CHUNK + 1L)).code());
        assertEquals(ProtocolException.TOO_LONG,
                rejected(header(Wire.MAGIC, Wire.TYPE_CALL, 0, 0, 0xFFFFFFFFL)).code());
    }

    @Test
    void aChunkAtTheLimitIsAccepted() {
        EmbeddedChannel ch = new EmbeddedChannel(new FrameDecoder());
        ch.writeInbound(header(Wire.MAGIC, Wire.TYPE_BINARY_CHUNK, 0, 0, Wire.MAX_BINARY_CHUNK));
        ch.writeInbound(Unpooled.wrappedBuffer(new byte[Wire.MAX_BINARY_CHUNK]));
        Frame f = ch.readInbound();
        assertEquals(Wire.MAX_BINARY_CHUNK, f.payload().readableBytes());
        f.release();
        ch.finishAndReleaseAll();
    }
}
