package io.vmcuda.rewriter;

/** {@code .dynsym} and its string table {@code .dynstr}, cross-checked against DT_SYMTAB/DT_STRTAB/DT_STRSZ. */
final class DynamicSymbols {
    final Section symbols;
    final StringTable strings;
    final int count;
    private final FileBytes bytes;

    private DynamicSymbols(FileBytes bytes, Section symbols, StringTable strings) {
        this.bytes = bytes;
        this.symbols = symbols;
        this.strings = strings;
        this.count = (int) (symbols.size() / Elf64.SYM_SIZE);
    }

    static DynamicSymbols read(ParsedElf elf, DynamicTable dynamic) throws ElfRewriteException {
        Section dynsym = elf.firstSection(Elf64.SHT_DYNSYM)
                .orElseThrow(() -> new ElfRewriteException("corrupt: no .dynsym section"));
        ParsedElf.requireName(dynsym, ".dynsym");
        if (dynsym.entsize() != Elf64.SYM_SIZE || dynsym.size() % Elf64.SYM_SIZE != 0
                || dynsym.size() / Elf64.SYM_SIZE > Integer.MAX_VALUE) {
            throw new ElfRewriteException("corrupt .dynsym: entry size " + dynsym.entsize() + ", size " + dynsym.size());
        }
        if (dynamic.require(Elf64.DT_SYMTAB, "DT_SYMTAB") != dynsym.addr()) {
            throw new ElfRewriteException("corrupt: DT_SYMTAB does not point at .dynsym");
        }
        if (dynamic.value(Elf64.DT_SYMENT).orElse(Elf64.SYM_SIZE) != Elf64.SYM_SIZE) {
            throw new ElfRewriteException("corrupt .dynamic: DT_SYMENT is not 24");
        }
        elf.requireLoadedWhereItSays(dynsym);
        Section dynstr = elf.section(dynsym.link(), ".dynsym's sh_link");
        ParsedElf.requireName(dynstr, ".dynstr");
        if (dynamic.section.link() != dynstr.index()) {
            throw new ElfRewriteException("corrupt: .dynamic and .dynsym link to different string tables");
        }
        if (dynamic.require(Elf64.DT_STRTAB, "DT_STRTAB") != dynstr.addr()
                || dynamic.require(Elf64.DT_STRSZ, "DT_STRSZ") != dynstr.size()) {
            throw new ElfRewriteException("corrupt: DT_STRTAB/DT_STRSZ disagree with the " + dynstr.describe()
                    + " header");
        }
        if (dynstr.size() == 0 || dynstr.size() > (64 << 20)) {
            throw new ElfRewriteException("corrupt: implausible .dynstr size " + dynstr.size());
        }
        elf.requireLoadedWhereItSays(dynstr);
        return new DynamicSymbols(elf.bytes, dynsym, new StringTable(elf.bytes, dynstr));
    }

    long entryOffset(int index) {
        return symbols.offset() + (long) index * Elf64.SYM_SIZE;
    }

    String name(int index) throws ElfRewriteException {
        return strings.at(bytes.u32(entryOffset(index), ".dynsym"), "dynamic symbol " + index);
    }

    int sectionIndex(int index) throws ElfRewriteException {
        return bytes.u16(entryOffset(index) + 6, ".dynsym");
    }

    /** Index of the first symbol with this name, or -1. */
    int indexOf(String name) throws ElfRewriteException {
        for (int i = 1; i < count; i++) {
            if (name(i).equals(name)) {
                return i;
            }
        }
        return -1;
    }
}
