package io.vmcuda.rewriter;

import java.util.HashMap;
import java.util.Map;
import java.util.Optional;

/**
 * GNU symbol versioning of the dynamic symbols: {@code .gnu.version} (one half-word per .dynsym entry) and
 * {@code .gnu.version_r} (the versions required from each needed library). jelf does not decode these.
 *
 * <p>The rewriter only changes one {@code .gnu.version} half-word; {@code .gnu.version_r} is parsed to prove
 * it is intact and stays valid (its GLIBC_2.34 entry may end up unused by any symbol, which ld.so accepts:
 * it only checks that each required version exists in the named library).
 */
final class SymbolVersions {
    private static final int VERNEED_SIZE = 16;
    private static final int VERNAUX_SIZE = 16;

    /** The .gnu.version section, if the binary uses symbol versioning. */
    final Optional<Section> versym;
    /** vna_other index -> "GLIBC_2.34 from libc.so.6". */
    private final Map<Integer, String> required;
    private final boolean hasVerdef;
    private final FileBytes bytes;

    private SymbolVersions(FileBytes bytes, Optional<Section> versym, Map<Integer, String> required,
                           boolean hasVerdef) {
        this.bytes = bytes;
        this.versym = versym;
        this.required = required;
        this.hasVerdef = hasVerdef;
    }

    static SymbolVersions read(ParsedElf elf, DynamicTable dynamic, DynamicSymbols symbols)
            throws ElfRewriteException {
        Optional<Section> versym = elf.firstSection(Elf64.SHT_GNU_VERSYM);
        if (versym.isPresent()) {
            Section s = versym.get();
            if (s.link() != symbols.symbols.index() || s.size() != (long) symbols.count * Elf64.VERSYM_SIZE) {
                throw new ElfRewriteException("corrupt .gnu.version: it does not have one entry per .dynsym symbol");
            }
            if (dynamic.value(Elf64.DT_VERSYM).orElse(-1) != s.addr()) {
                throw new ElfRewriteException("corrupt: DT_VERSYM does not point at .gnu.version");
            }
            elf.requireLoadedWhereItSays(s);
        } else if (dynamic.has(Elf64.DT_VERSYM)) {
            throw new ElfRewriteException("corrupt: DT_VERSYM is set but there is no .gnu.version section");
        }
        Map<Integer, String> required = new HashMap<>();
        Optional<Section> verneed = elf.firstSection(Elf64.SHT_GNU_VERNEED);
        if (verneed.isPresent()) {
            readVerneed(elf, dynamic, symbols, verneed.get(), required);
        } else if (dynamic.has(Elf64.DT_VERNEED)) {
            throw new ElfRewriteException("corrupt: DT_VERNEED is set but there is no .gnu.version_r section");
        }
        boolean hasVerdef = elf.firstSection(0x6ffffffd).isPresent();
        return new SymbolVersions(elf.bytes, versym, required, hasVerdef);
    }

    private static void readVerneed(ParsedElf elf, DynamicTable dynamic, DynamicSymbols symbols, Section s,
                                    Map<Integer, String> required) throws ElfRewriteException {
        if (s.link() != symbols.strings.section.index()) {
            throw new ElfRewriteException("corrupt .gnu.version_r: it does not link to .dynstr");
        }
        if (dynamic.value(Elf64.DT_VERNEED).orElse(-1) != s.addr()
                || dynamic.value(Elf64.DT_VERNEEDNUM).orElse(-1) != Integer.toUnsignedLong(s.info())) {
            throw new ElfRewriteException("corrupt: DT_VERNEED/DT_VERNEEDNUM disagree with .gnu.version_r");
        }
        elf.requireLoadedWhereItSays(s);
        FileBytes b = elf.bytes;
        long end = s.offset() + s.size();
        long at = s.offset();
        int files = s.info();
        if (files < 0 || (long) files * VERNEED_SIZE > s.size()) {
            throw new ElfRewriteException("corrupt .gnu.version_r: " + Integer.toUnsignedString(files)
                    + " entries do not fit in " + s.size() + " bytes");
        }
        for (int f = 0; f < files; f++) {
            checkRecord(at, VERNEED_SIZE, end);
            int version = b.u16(at, ".gnu.version_r");
            int auxCount = b.u16(at + 2, ".gnu.version_r");
            String file = symbols.strings.at(b.u32(at + 4, ".gnu.version_r"), ".gnu.version_r file name");
            long aux = at + b.u32(at + 8, ".gnu.version_r");
            if (version != 1) {
                throw new ElfRewriteException("corrupt .gnu.version_r: entry for " + file + " has version " + version);
            }
            for (int a = 0; a < auxCount; a++) {
                checkRecord(aux, VERNAUX_SIZE, end);
                int other = b.u16(aux + 6, ".gnu.version_r") & 0x7fff;
                String name = symbols.strings.at(b.u32(aux + 8, ".gnu.version_r"), ".gnu.version_r version name");
                required.put(other, name + " from " + file);
                long next = b.u32(aux + 12, ".gnu.version_r");
                if (a + 1 < auxCount && next == 0) {
                    throw new ElfRewriteException("corrupt .gnu.version_r: vna_next ends the list early");
                }
                aux += next;
            }
            long next = b.u32(at + 12, ".gnu.version_r");
            if (f + 1 < files && next == 0) {
                throw new ElfRewriteException("corrupt .gnu.version_r: vn_next ends the list early");
            }
            at += next;
        }
    }

    private static void checkRecord(long at, int size, long end) throws ElfRewriteException {
        if (at < 0 || at > end - size) {
            throw new ElfRewriteException("corrupt .gnu.version_r: a record points outside the section");
        }
    }

    /** The file offset of a symbol's .gnu.version half-word, if versioning is used. */
    Optional<Long> entryOffset(int symbolIndex) {
        return versym.map(s -> s.offset() + (long) symbolIndex * Elf64.VERSYM_SIZE);
    }

    /** "GLIBC_2.34 from libc.so.6", "unversioned", ...; fails if the index is not defined anywhere. */
    String describeVersionOf(int symbolIndex) throws ElfRewriteException {
        Optional<Long> at = entryOffset(symbolIndex);
        if (at.isEmpty()) {
            return "unversioned";
        }
        int index = bytes.u16(at.get(), ".gnu.version") & ~Elf64.VERSYM_HIDDEN;
        if (index == 0 || index == Elf64.VER_NDX_GLOBAL) {
            return "unversioned";
        }
        String version = required.get(index);
        if (version == null && !hasVerdef) {
            throw new ElfRewriteException("corrupt .gnu.version: symbol " + symbolIndex + " has version index "
                    + index + ", which .gnu.version_r does not define");
        }
        return version == null ? "version " + index : version;
    }
}
