package io.vmcuda.rewriter;

import java.nio.ByteBuffer;

/** One program header (Elf64_Phdr); immutable, the rewriter builds new ones with the {@code with...} methods. */
record Segment(int type, int flags, long offset, long vaddr, long paddr, long filesz, long memsz, long align) {

    String describe(int index) {
        return "program header " + index + " (" + Elf64.segmentTypeName(type) + ")";
    }

    boolean isLoad() {
        return type == Elf64.PT_LOAD;
    }

    /** Whether virtual addresses [addr, addr+len) are backed by this segment's file bytes. */
    boolean mapsFileBytes(long addr, long len) {
        return addr >= vaddr && len >= 0 && len <= filesz && addr - vaddr <= filesz - len;
    }

    long fileOffsetOf(long addr) {
        return offset + (addr - vaddr);
    }

    /** Writes the 56-byte little-endian Elf64_Phdr at the buffer's position. */
    void writeTo(ByteBuffer out) {
        out.putInt(type).putInt(flags).putLong(offset).putLong(vaddr).putLong(paddr)
                .putLong(filesz).putLong(memsz).putLong(align);
    }
}
