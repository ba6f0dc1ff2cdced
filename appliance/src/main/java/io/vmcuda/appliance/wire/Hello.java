package io.vmcuda.appliance.wire;

import io.netty.buffer.ByteBuf;
import io.vmcuda.protocol.Wire;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.HexFormat;

/**
 * A parsed HELLO (PROTOCOL.md "Session setup" step 1). Parsing checks every length against what is left
 * of the payload before reading, and rejects trailing bytes.
 *
 * @param visibleDevices the client's CUDA_VISIBLE_DEVICES, or null when it has none
 * @param signed the payload without its proof: what the proof's HMAC covers, after the challenge
 * @param proof  HMAC-SHA256(SHA-256(token), challenge || signed), or 32 zero bytes from a client without a token
 */
public record Hello(long protoVersion, long role, long binarySize, byte[] sha256, long gpusWanted,
                    long sessionId, byte[] sessionKey, String name, String visibleDevices, byte[] signed,
                    byte[] proof) {

    /** Fixed part: version, role, size, sha256, gpus_wanted, session_id, session_key. */
    private static final int FIXED_BYTES = 4 + 4 + 8 + Wire.SHA256_BYTES + 4 + 8 + Wire.SESSION_KEY_BYTES;

    public static Hello parse(ByteBuf p) {
        int start = p.readerIndex();
        need(p, FIXED_BYTES + 2 + Wire.PROOF_BYTES, "HELLO shorter than its fixed fields");
        long version = p.readUnsignedIntLE();
        long role = p.readUnsignedIntLE();
        long size = p.readLongLE();
        byte[] sha = new byte[Wire.SHA256_BYTES];
        p.readBytes(sha);
        long gpus = p.readUnsignedIntLE();
        long sessionId = p.readLongLE();
        byte[] key = new byte[Wire.SESSION_KEY_BYTES];
        p.readBytes(key);
        int nameLen = p.readUnsignedShortLE();
        need(p, nameLen + 2 + Wire.PROOF_BYTES, "HELLO name_len " + nameLen + " runs past the payload");
        String name = p.readCharSequence(nameLen, StandardCharsets.UTF_8).toString();
        int visibleLen = p.readUnsignedShortLE();
        String visible = null;
        if (visibleLen != Wire.VISIBLE_UNSET) {
            if (visibleLen > Wire.VISIBLE_MAX_BYTES) {
                throw new ProtocolException(ProtocolException.MALFORMED,
                        "HELLO visible_len " + visibleLen + " exceeds " + Wire.VISIBLE_MAX_BYTES);
            }
            need(p, visibleLen + Wire.PROOF_BYTES, "HELLO visible_len " + visibleLen + " runs past the payload");
            visible = p.readCharSequence(visibleLen, StandardCharsets.UTF_8).toString();
        }
        byte[] signed = new byte[p.readerIndex() - start];
        p.getBytes(start, signed);
        byte[] proof = new byte[Wire.PROOF_BYTES];
        p.readBytes(proof);
        if (p.isReadable()) {
            throw new ProtocolException(ProtocolException.MALFORMED,
                    "HELLO has " + p.readableBytes() + " trailing bytes");
        }
        return new Hello(version, role, size, sha, gpus, sessionId, key, name, visible, signed, proof);
    }

    /** The client sent no token (its proof is all zeros). */
    public boolean anonymous() {
        return Arrays.equals(proof, new byte[Wire.PROOF_BYTES]);
    }

    public String sha256Hex() {
        return HexFormat.of().formatHex(sha256);
    }

    private static void need(ByteBuf p, int n, String what) {
        if (p.readableBytes() < n) throw new ProtocolException(ProtocolException.MALFORMED, what);
    }
}
