package io.vmcuda.rewriter;

import java.util.ArrayList;
import java.util.List;
import java.util.OptionalLong;

/**
 * The entries of {@code .dynamic} up to and including DT_NULL, plus the raw bytes of the whole section
 * (linkers may leave spare DT_NULL slots after the terminator; they are copied along).
 */
final class DynamicTable {
    record Entry(long tag, long value) {
    }

    final Section section;
    final List<Entry> entries;
    final byte[] raw;

    private DynamicTable(Section section, List<Entry> entries, byte[] raw) {
        this.section = section;
        this.entries = entries;
        this.raw = raw;
    }

    static DynamicTable read(ParsedElf elf, Segment ptDynamic) throws ElfRewriteException {
        Section section = elf.firstSection(Elf64.SHT_DYNAMIC)
                .orElseThrow(() -> new ElfRewriteException("corrupt: PT_DYNAMIC exists but no .dynamic section"));
        ParsedElf.requireName(section, ".dynamic");
        if (section.offset() != ptDynamic.offset() || section.size() != ptDynamic.filesz()
                || section.addr() != ptDynamic.vaddr()) {
            throw new ElfRewriteException("corrupt: the .dynamic section and the PT_DYNAMIC segment disagree");
        }
        if (section.size() % Elf64.DYN_SIZE != 0 || section.size() == 0) {
            throw new ElfRewriteException("corrupt .dynamic: size " + section.size() + " is not a multiple of 16");
        }
        if (section.size() > (1 << 20)) {
            throw new ElfRewriteException("corrupt .dynamic: implausible size " + section.size());
        }
        elf.requireLoadedWhereItSays(section);
        byte[] raw = elf.bytes.copy(section.offset(), section.size(), ".dynamic");
        List<Entry> entries = new ArrayList<>();
        for (long at = section.offset(); at < section.offset() + section.size(); at += Elf64.DYN_SIZE) {
            Entry e = new Entry(elf.bytes.u64(at, ".dynamic"), elf.bytes.u64(at + 8, ".dynamic"));
            entries.add(e);
            if (e.tag() == Elf64.DT_NULL) {
                return new DynamicTable(section, List.copyOf(entries), raw);
            }
        }
        throw new ElfRewriteException("corrupt .dynamic: no DT_NULL terminator");
    }

    OptionalLong value(long tag) {
        for (Entry e : entries) {
            if (e.tag() == tag) {
                return OptionalLong.of(e.value());
            }
        }
        return OptionalLong.empty();
    }

    long require(long tag, String name) throws ElfRewriteException {
        OptionalLong v = value(tag);
        if (v.isEmpty()) {
            throw new ElfRewriteException("corrupt .dynamic: no " + name + " entry");
        }
        return v.getAsLong();
    }

    boolean has(long tag) {
        return value(tag).isPresent();
    }

    List<Long> neededOffsets() {
        return entries.stream().filter(e -> e.tag() == Elf64.DT_NEEDED).map(Entry::value).toList();
    }
}
