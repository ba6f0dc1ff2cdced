package io.vmcuda.appliance.wire;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.Unpooled;
import io.vmcuda.protocol.Wire;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

class HelloTest {
    private static ByteBuf hello(byte[] proof, byte[] name, int trailing) {
        return hello(proof, name, null, trailing);
    }

    /** {@code visible}: the client's CUDA_VISIBLE_DEVICES, or null for none. */
    private static ByteBuf hello(byte[] proof, byte[] name, byte[] visible, int trailing) {
        ByteBuf b = Unpooled.buffer();
        b.writeIntLE(1).writeIntLE(1).writeLongLE(1234);
        for (int i = 0; i < 32; i++) b.writeByte(i);
        b.writeIntLE(2).writeLongLE(99);
        for (int i = 0; i < 32; i++) b.writeByte(0xA0 + i);
        b.writeShortLE(name.length).writeBytes(name);
        if (visible == null) b.writeShortLE(Wire.VISIBLE_UNSET);
        else b.writeShortLE(visible.length).writeBytes(visible);
        b.writeBytes(proof);
        b.writeZero(trailing);
        return b;
    }

    private static byte[] proof(int first) {
        byte[] p = new byte[Wire.PROOF_BYTES];
        p[0] = (byte) first;
        return p;
    }

    @Test
    void parsesEveryField() {
        ByteBuf raw = hello(proof(7), "prög".getBytes(StandardCharsets.UTF_8), 0);
        int signedLen = raw.readableBytes() - Wire.PROOF_BYTES;
        Hello h = Hello.parse(raw);
        assertEquals(1, h.protoVersion());
        assertEquals(Wire.ROLE_JOIN, h.role());
        assertEquals(1234, h.binarySize());
        assertEquals("000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f", h.sha256Hex());
        assertEquals(2, h.gpusWanted());
        assertEquals(99, h.sessionId());
        assertEquals((byte) 0xA0, h.sessionKey()[0]);
        assertEquals("prög", h.name());
        assertEquals(null, h.visibleDevices(), "no CUDA_VISIBLE_DEVICES");
        assertArrayEquals(proof(7), h.proof());
        assertEquals(signedLen, h.signed().length, "the proof covers everything before it");
        assertEquals(false, h.anonymous());
        assertEquals(true, Hello.parse(hello(proof(0), new byte[0], 0)).anonymous());
    }

    @Test
    void carriesTheClientsVisibleDevices() {
        Hello h = Hello.parse(hello(proof(1), "p".getBytes(StandardCharsets.UTF_8), "1,GPU-ab".getBytes(StandardCharsets.UTF_8), 0));
        assertEquals("1,GPU-ab", h.visibleDevices());
        assertEquals("", Hello.parse(hello(proof(1), new byte[0], new byte[0], 0)).visibleDevices(), "set but empty: no GPU");
        ProtocolException e = assertThrows(ProtocolException.class,
                () -> Hello.parse(hello(proof(1), new byte[0], new byte[Wire.VISIBLE_MAX_BYTES + 1], 0)));
        assertEquals(ProtocolException.MALFORMED, e.code());
    }

    @Test
    void trailingBytesAreMalformed() {
        ProtocolException e = assertThrows(ProtocolException.class, () -> Hello.parse(hello(proof(1), new byte[0], 1)));
        assertEquals(ProtocolException.MALFORMED, e.code());
    }

    @Test
    void everyTruncationIsMalformedNeverAnIndexError() {
        ByteBuf full = hello(proof(1), "name".getBytes(StandardCharsets.UTF_8), 0);
        for (int n = 0; n < full.readableBytes(); n++) {
            ByteBuf cut = full.slice(0, n);
            ProtocolException e = assertThrows(ProtocolException.class, () -> Hello.parse(cut), "length " + n);
            assertEquals(ProtocolException.MALFORMED, e.code());
        }
    }

    @Test
    void challengeLayoutMatchesTheProtocol() {
        byte[] nonce = new byte[Wire.CHALLENGE_BYTES];
        nonce[31] = 9;
        ByteBuf b = Frames.challenge(ByteBufAllocator.DEFAULT, nonce);
        assertEquals(Wire.MAGIC, b.readIntLE());
        assertEquals(Wire.TYPE_CHALLENGE, b.readUnsignedShortLE());
        b.skipBytes(2 + 4);
        assertEquals(Wire.CHALLENGE_BYTES, b.readIntLE());
        b.skipBytes(31);
        assertEquals(9, b.readByte());
        b.release();
    }

    @Test
    void replyLayoutMatchesTheProtocol() {
        byte[] key = new byte[32];
        key[31] = 7;
        ByteBuf b = Frames.helloReply(ByteBufAllocator.DEFAULT, HelloReply.ready(5, key, 2, "hi", null));
        assertEquals(Wire.MAGIC, b.readIntLE());
        assertEquals(Wire.TYPE_HELLO_REPLY, b.readUnsignedShortLE());
        b.skipBytes(2 + 4);
        assertEquals(4 + 8 + 32 + 4 + 2 + 2, b.readIntLE());
        assertEquals(Wire.HELLO_READY, b.readIntLE());
        assertEquals(5, b.readLongLE());
        b.skipBytes(31);
        assertEquals(7, b.readByte());
        assertEquals(2, b.readIntLE());
        assertEquals(2, b.readUnsignedShortLE());
        assertEquals("hi", b.readCharSequence(2, StandardCharsets.UTF_8).toString());
        b.release();
    }

    @Test
    void refusalsAreOneLine() {
        assertEquals("a b", HelloReply.refused("a\r\nb").message());
    }
}
