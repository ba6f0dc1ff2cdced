package io.vmcuda.appliance.wire;

import io.netty.buffer.ByteBuf;
import io.vmcuda.protocol.Wire;
import java.nio.charset.StandardCharsets;
import java.util.HexFormat;

/**
 * A parsed HELLO (PROTOCOL.md "Session setup" step 1). Parsing checks every length against what is left
 * of the payload before reading, and rejects trailing bytes.
 */
public record Hello(long protoVersion, long role, long binarySize, byte[] sha256, long gpusWanted,
                    long sessionId, byte[] sessionKey, byte[] token, String name) {

    /** Fixed part: version, role, size, sha256, gpus_wanted, session_id, session_key. */
    private static final int FIXED_BYTES = 4 + 4 + 8 + Wire.SHA256_BYTES + 4 + 8 + Wire.SESSION_KEY_BYTES;

    public static Hello parse(ByteBuf p) {
        need(p, FIXED_BYTES + 2, "HELLO shorter than its fixed fields");
        long version = p.readUnsignedIntLE();
        long role = p.readUnsignedIntLE();
        long size = p.readLongLE();
        byte[] sha = new byte[Wire.SHA256_BYTES];
        p.readBytes(sha);
        long gpus = p.readUnsignedIntLE();
        long sessionId = p.readLongLE();
        byte[] key = new byte[Wire.SESSION_KEY_BYTES];
        p.readBytes(key);
        int tokenLen = p.readUnsignedShortLE();
        need(p, tokenLen + 2, "HELLO token_len " + tokenLen + " runs past the payload");
        byte[] token = new byte[tokenLen];
        p.readBytes(token);
        int nameLen = p.readUnsignedShortLE();
        need(p, nameLen, "HELLO name_len " + nameLen + " runs past the payload");
        String name = p.readCharSequence(nameLen, StandardCharsets.UTF_8).toString();
        if (p.isReadable()) {
            throw new ProtocolException(ProtocolException.MALFORMED,
                    "HELLO has " + p.readableBytes() + " trailing bytes");
        }
        return new Hello(version, role, size, sha, gpus, sessionId, key, token, name);
    }

    public String sha256Hex() {
        return HexFormat.of().formatHex(sha256);
    }

    private static void need(ByteBuf p, int n, String what) {
        if (p.readableBytes() < n) throw new ProtocolException(ProtocolException.MALFORMED, what);
    }
}
