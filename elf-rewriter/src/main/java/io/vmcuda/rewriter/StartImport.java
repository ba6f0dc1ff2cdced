package io.vmcuda.rewriter;

import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * Everything the rewrite depends on, found and validated: the program is a dynamically linked executable
 * whose {@code _start} enters glibc through the imported {@code __libc_start_main}, and its dynamic
 * tables (.dynamic, .dynstr, .dynsym, symbol versions, relocations, .gnu.hash) are consistent.
 */
final class StartImport {
    static final String LIBC_START_MAIN = "__libc_start_main";
    /** Tags whose value is an offset into .dynstr. */
    private static final long[] STRING_TAGS = {1 /* NEEDED */, 14 /* SONAME */, 15 /* RPATH */,
            29 /* RUNPATH */, 0x7ffffffdL /* AUXILIARY */, 0x7fffffffL /* FILTER */};

    final ParsedElf elf;
    final DynamicTable dynamic;
    final DynamicSymbols symbols;
    final SymbolVersions versions;
    final List<String> neededLibraries;
    /** .dynsym index of the undefined __libc_start_main. */
    final int symbolIndex;
    final String version;

    private StartImport(ParsedElf elf, DynamicTable dynamic, DynamicSymbols symbols, SymbolVersions versions,
                        List<String> neededLibraries, int symbolIndex, String version) {
        this.elf = elf;
        this.dynamic = dynamic;
        this.symbols = symbols;
        this.versions = versions;
        this.neededLibraries = neededLibraries;
        this.symbolIndex = symbolIndex;
        this.version = version;
    }

    static StartImport find(ParsedElf elf, String needed, String entrySymbol) throws ElfRewriteException {
        Optional<Segment> ptDynamic = elf.firstSegment(Elf64.PT_DYNAMIC);
        if (ptDynamic.isEmpty()) {
            if (StaticCudartDetector.linksCudartStatically(elf, List.of())) {
                throw new ElfRewriteException("statically linked (no PT_DYNAMIC), and " + StaticCudartDetector.ADVICE);
            }
            throw new ElfRewriteException("statically linked (no PT_DYNAMIC segment): only dynamically linked"
                    + " executables can be rewritten");
        }
        DynamicTable dynamic = DynamicTable.read(elf, ptDynamic.get());
        DynamicSymbols symbols = DynamicSymbols.read(elf, dynamic);
        List<String> needs = readDynamicStrings(dynamic, symbols);
        if (elf.firstSegment(Elf64.PT_INTERP).isEmpty()) {
            throw new ElfRewriteException(needs.isEmpty()
                    ? "statically linked (static-pie: no PT_INTERP, no DT_NEEDED): only dynamically linked"
                    + " executables can be rewritten"
                    : "a shared library (no PT_INTERP program interpreter), not an executable");
        }
        if (!needs.isEmpty() && needs.get(0).equals(needed)) {
            throw new ElfRewriteException("already rewritten: its first DT_NEEDED is " + needed);
        }
        if (StaticCudartDetector.linksCudartStatically(elf, needs)) {
            throw new ElfRewriteException(StaticCudartDetector.ADVICE);
        }
        if (symbols.indexOf(entrySymbol) >= 0) {
            throw new ElfRewriteException("already rewritten: it already imports " + entrySymbol);
        }
        int index = symbols.indexOf(LIBC_START_MAIN);
        if (index < 0) {
            throw new ElfRewriteException("does not import " + LIBC_START_MAIN
                    + " (not a program started by glibc's C runtime)");
        }
        if (symbols.sectionIndex(index) != Elf64.SHN_UNDEF) {
            throw new ElfRewriteException("defines " + LIBC_START_MAIN + " itself instead of importing it");
        }
        SymbolVersions versions = SymbolVersions.read(elf, dynamic, symbols);
        String version = versions.describeVersionOf(index);
        requireNotHashed(elf, dynamic, index);
        requireRelocationsUse(elf, symbols, index);
        return new StartImport(elf, dynamic, symbols, versions, needs, index, version);
    }

    /** Validates every string-valued .dynamic entry and returns the DT_NEEDED names in order. */
    private static List<String> readDynamicStrings(DynamicTable dynamic, DynamicSymbols symbols)
            throws ElfRewriteException {
        List<String> needed = new ArrayList<>();
        for (DynamicTable.Entry e : dynamic.entries) {
            for (long tag : STRING_TAGS) {
                if (e.tag() == tag) {
                    String s = symbols.strings.at(e.value(), ".dynamic entry with tag 0x" + Long.toHexString(tag));
                    if (tag == Elf64.DT_NEEDED) {
                        needed.add(s);
                    }
                }
            }
        }
        return List.copyOf(needed);
    }

    /**
     * DT_GNU_HASH hashes only the symbols from its first chained index on (the smallest non-zero bucket),
     * which ld puts after every undefined symbol: renaming the import then leaves the hash table valid.
     * Anything else is refused rather than guessed at. (A SysV DT_HASH chains every symbol, but the renamed
     * entry is undefined, so ld.so never matches it in this object whichever bucket it sits in.)
     */
    private static void requireNotHashed(ParsedElf elf, DynamicTable dynamic, int index) throws ElfRewriteException {
        if (!dynamic.has(Elf64.DT_GNU_HASH)) {
            return;
        }
        long address = dynamic.require(Elf64.DT_GNU_HASH, "DT_GNU_HASH");
        long header = elf.fileOffsetOf(address, 16, "DT_GNU_HASH table");
        long buckets = elf.bytes.u32(header, ".gnu.hash");
        long bloomWords = elf.bytes.u32(header + 8, ".gnu.hash");
        long bucketsAddress = address + 16 + bloomWords * 8;
        long bucketsAt = elf.fileOffsetOf(bucketsAddress, buckets * 4, ".gnu.hash buckets");
        long firstHashed = Long.MAX_VALUE;
        for (long i = 0; i < buckets; i++) {
            long first = elf.bytes.u32(bucketsAt + i * 4, ".gnu.hash");
            if (first != 0) {
                firstHashed = Math.min(firstHashed, first);
            }
        }
        if (index >= firstHashed) {
            throw new ElfRewriteException("unsupported: .gnu.hash covers the undefined " + LIBC_START_MAIN
                    + " (symbol " + index + ", hashing starts at " + firstHashed + ")");
        }
    }

    /**
     * Relocations name symbols by .dynsym index (jelf's getSymbol() would look in .symtab: wrong here), so
     * renaming keeps them valid. At least one must use the symbol, or renaming would not change the start.
     */
    private static void requireRelocationsUse(ParsedElf elf, DynamicSymbols symbols, int index)
            throws ElfRewriteException {
        int uses = 0;
        for (Section s : elf.sections) {
            if (s.type() != Elf64.SHT_RELA || s.link() != symbols.symbols.index()) {
                continue;
            }
            if (s.entsize() != Elf64.RELA_SIZE || s.size() % Elf64.RELA_SIZE != 0) {
                throw new ElfRewriteException("corrupt " + s.describe() + ": entry size " + s.entsize());
            }
            for (long at = s.offset(); at < s.offset() + s.size(); at += Elf64.RELA_SIZE) {
                long symbol = elf.bytes.u64(at + 8, s.describe()) >>> 32;
                if (symbol >= symbols.count) {
                    throw new ElfRewriteException("corrupt " + s.describe() + ": a relocation refers to symbol "
                            + symbol + ", beyond the " + symbols.count + " symbols of .dynsym");
                }
                if (symbol == index) {
                    uses++;
                }
            }
        }
        if (uses == 0) {
            throw new ElfRewriteException("no dynamic relocation uses " + LIBC_START_MAIN
                    + ": renaming it would not change how the program starts");
        }
    }
}
