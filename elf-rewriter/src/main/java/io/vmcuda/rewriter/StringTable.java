package io.vmcuda.rewriter;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;

/** NUL-terminated strings of a SHT_STRTAB section, read with bounds checks. */
final class StringTable {
    final Section section;
    private final FileBytes bytes;

    StringTable(FileBytes bytes, Section section) throws ElfRewriteException {
        if (section.type() != Elf64.SHT_STRTAB) {
            throw new ElfRewriteException("corrupt: " + section.describe() + " is used as a string table but is not one");
        }
        this.bytes = bytes;
        this.section = section;
    }

    String at(long offset, String what) throws ElfRewriteException {
        if (offset < 0 || offset >= section.size()) {
            throw new ElfRewriteException("corrupt: " + what + " has string offset " + offset
                    + ", beyond " + section.describe() + " (" + section.size() + " bytes)");
        }
        ByteArrayOutputStream name = new ByteArrayOutputStream();
        for (long at = section.offset() + offset; at < section.offset() + section.size(); at++) {
            int b = bytes.u8(at, section.describe());
            if (b == 0) {
                return name.toString(StandardCharsets.UTF_8);
            }
            name.write(b);
        }
        throw new ElfRewriteException("corrupt: " + what + " runs past the end of " + section.describe());
    }

    /** Whether the string at offset starts with prefix (false for offsets out of range). */
    boolean startsWith(long offset, byte[] prefix) {
        return offset >= 0 && offset <= section.size() - prefix.length
                && bytes.matches(section.offset() + offset, prefix);
    }
}
