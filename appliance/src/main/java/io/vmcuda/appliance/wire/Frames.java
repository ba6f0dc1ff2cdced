package io.vmcuda.appliance.wire;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.vmcuda.protocol.Wire;
import java.nio.charset.StandardCharsets;

/** Builds the frames the daemon sends: CHALLENGE, HELLO_REPLY and ERROR. */
public final class Frames {
    private Frames() {}

    public static ByteBuf helloReply(ByteBufAllocator alloc, HelloReply r) {
        byte[] msg = Utf8.truncate(r.message(), Wire.MAX_CONTROL_PAYLOAD - 64);
        int link = r.linkKey() == null ? 0 : Wire.LINK_KEY_BYTES;
        ByteBuf b = alloc.buffer(Wire.HEADER_BYTES + 4 + 8 + 32 + 4 + 2 + msg.length + link);
        header(b, Wire.TYPE_HELLO_REPLY, 4 + 8 + 32 + 4 + 2 + msg.length + link);
        b.writeIntLE(r.status());
        b.writeLongLE(r.sessionId());
        b.writeBytes(r.sessionKey(), 0, Wire.SESSION_KEY_BYTES);
        b.writeIntLE(r.gpuCount());
        b.writeShortLE(msg.length);
        b.writeBytes(msg);
        if (link > 0) b.writeBytes(r.linkKey(), 0, link);
        return b;
    }

    public static ByteBuf challenge(ByteBufAllocator alloc, byte[] nonce) {
        ByteBuf b = alloc.buffer(Wire.HEADER_BYTES + Wire.CHALLENGE_BYTES);
        header(b, Wire.TYPE_CHALLENGE, Wire.CHALLENGE_BYTES);
        b.writeBytes(nonce, 0, Wire.CHALLENGE_BYTES);
        return b;
    }

    public static ByteBuf error(ByteBufAllocator alloc, int code, String message) {
        byte[] msg = Utf8.truncate(message, Wire.MAX_CONTROL_PAYLOAD - 16);
        ByteBuf b = alloc.buffer(Wire.HEADER_BYTES + 6 + msg.length);
        header(b, Wire.TYPE_ERROR, 6 + msg.length);
        b.writeIntLE(code);
        b.writeShortLE(msg.length);
        b.writeBytes(msg);
        return b;
    }

    static void header(ByteBuf b, int type, int len) {
        b.writeIntLE(Wire.MAGIC);
        b.writeShortLE(type);
        b.writeShortLE(0);
        b.writeIntLE(0);
        b.writeIntLE(len);
    }

    /** UTF-8 helpers that respect the u16 length fields. */
    static final class Utf8 {
        private Utf8() {}

        /** Encodes, cutting at a character boundary so the result is at most {@code max} bytes. */
        static byte[] truncate(String s, int max) {
            byte[] b = s.getBytes(StandardCharsets.UTF_8);
            if (b.length <= max) return b;
            int n = max;
            while (n > 0 && (b[n] & 0xC0) == 0x80) n--; // do not split a multi-byte character
            byte[] cut = new byte[n];
            System.arraycopy(b, 0, cut, 0, n);
            return cut;
        }
    }
}
