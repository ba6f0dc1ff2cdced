package io.vmcuda.appliance.wire;

import io.netty.buffer.ByteBuf;
import io.vmcuda.protocol.Wire;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;

/**
 * A LIBRARIES frame (PROTOCOL.md "Client libraries"): {@code u16 count}, then per library {@code u16 name_len,
 * name, u64 size, u8[32] sha256}; size 0 with a zero hash: the client has no such library either.
 */
public record LibraryList(List<Entry> entries) {
    public record Entry(String name, long size, byte[] sha256) {
        public String sha256Hex() {
            return HexFormat.of().formatHex(sha256);
        }

        public boolean absent() {
            return size == 0;
        }
    }

    public static LibraryList parse(ByteBuf p) {
        need(p, 2, "LIBRARIES shorter than its count");
        int count = p.readUnsignedShortLE();
        if (count > Wire.MAX_CLIENT_LIBRARIES) {
            throw new ProtocolException(ProtocolException.MALFORMED, "LIBRARIES lists " + count + " libraries, more than "
                    + Wire.MAX_CLIENT_LIBRARIES);
        }
        List<Entry> entries = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            need(p, 2, "LIBRARIES entry " + i + " cut short");
            int nameLen = p.readUnsignedShortLE();
            need(p, nameLen + 8 + Wire.SHA256_BYTES, "LIBRARIES entry " + i + " runs past the payload");
            String name = p.readCharSequence(nameLen, StandardCharsets.UTF_8).toString();
            long size = p.readLongLE();
            byte[] sha = new byte[Wire.SHA256_BYTES];
            p.readBytes(sha);
            if (size < 0) throw new ProtocolException(ProtocolException.MALFORMED, "LIBRARIES entry " + i + ": negative size");
            entries.add(new Entry(name, size, sha));
        }
        if (p.isReadable()) {
            throw new ProtocolException(ProtocolException.MALFORMED, "LIBRARIES has " + p.readableBytes() + " trailing bytes");
        }
        return new LibraryList(List.copyOf(entries));
    }

    private static void need(ByteBuf p, int n, String what) {
        if (p.readableBytes() < n) throw new ProtocolException(ProtocolException.MALFORMED, what);
    }
}
