package io.vmcuda.rewriter;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * Bounds-checked little-endian reads from the memory-mapped input. Every read names what it was reading,
 * so that a truncated or inconsistent file is refused with a message saying which table is broken.
 * Absolute reads only: the buffer's position is never used, so one instance can be shared freely.
 */
final class FileBytes {
    private final ByteBuffer buffer;
    private final long size;

    FileBytes(ByteBuffer buffer) {
        this.buffer = buffer.duplicate().order(ByteOrder.LITTLE_ENDIAN);
        this.size = buffer.limit();
    }

    long size() {
        return size;
    }

    /** Fails unless bytes [offset, offset+length) lie inside the file; overflow-safe for any input. */
    void requireRange(long offset, long length, String what) throws ElfRewriteException {
        if (offset < 0 || length < 0 || offset > size || length > size - offset) {
            throw new ElfRewriteException("truncated or corrupt: " + what + " (offset 0x" + Long.toHexString(offset)
                    + ", " + Long.toUnsignedString(length) + " bytes) lies beyond the end of the file ("
                    + size + " bytes)");
        }
    }

    int u8(long offset, String what) throws ElfRewriteException {
        requireRange(offset, 1, what);
        return buffer.get((int) offset) & 0xff;
    }

    int u16(long offset, String what) throws ElfRewriteException {
        requireRange(offset, 2, what);
        return buffer.getShort((int) offset) & 0xffff;
    }

    long u32(long offset, String what) throws ElfRewriteException {
        requireRange(offset, 4, what);
        return buffer.getInt((int) offset) & 0xffffffffL;
    }

    long u64(long offset, String what) throws ElfRewriteException {
        requireRange(offset, 8, what);
        return buffer.getLong((int) offset);
    }

    /** A copy of a (small) table, e.g. .dynamic or .dynstr, which the rewriter extends. */
    byte[] copy(long offset, long length, String what) throws ElfRewriteException {
        requireRange(offset, length, what);
        byte[] out = new byte[Math.toIntExact(length)];
        buffer.get((int) offset, out);
        return out;
    }

    /** Whether the bytes at offset equal {@code expected} (false when they would run past the end). */
    boolean matches(long offset, byte[] expected) {
        if (offset < 0 || offset > size - expected.length) {
            return false;
        }
        for (int i = 0; i < expected.length; i++) {
            if (buffer.get((int) offset + i) != expected[i]) {
                return false;
            }
        }
        return true;
    }
}
