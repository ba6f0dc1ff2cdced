package io.vmcuda.rewriter;

import java.nio.ByteBuffer;

/** One section header (Elf64_Shdr) and its resolved name. */
record Section(int index, String name, int nameOffset, int type, long flags, long addr, long offset, long size,
               int link, int info, long addralign, long entsize) {

    String describe() {
        return name.isEmpty() ? "section " + index : "section " + index + " (" + name + ")";
    }

    boolean occupiesFile() {
        return type != Elf64.SHT_NOBITS && type != 0;
    }

    Section movedTo(long newOffset, long newAddr, long newSize) {
        return new Section(index, name, nameOffset, type, flags, newAddr, newOffset, newSize, link, info,
                addralign, entsize);
    }

    /** Writes the 64-byte little-endian Elf64_Shdr at the buffer's position. */
    void writeTo(ByteBuffer out) {
        out.putInt(nameOffset).putInt(type).putLong(flags).putLong(addr).putLong(offset).putLong(size)
                .putInt(link).putInt(info).putLong(addralign).putLong(entsize);
    }
}
