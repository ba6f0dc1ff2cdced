package io.vmcuda.rewriter;

import java.util.List;

/**
 * Cross-checks between headers that the rewriter itself does not need but that its output must satisfy to be
 * coherent for other tools: the rewriter copies every header it does not change, so a broken one would
 * carry into the output. The rules mirror those binutils' readelf enforces (sh_link/sh_info by section
 * type, PT_PHDR placement, one PT_DYNAMIC, a terminated PT_INTERP).
 */
final class HeaderConsistency {
    private static final int SHT_PROGBITS = 1;
    private static final int SHT_HASH = 5;
    private static final int SHT_NOTE = 7;
    private static final int SHT_REL = 9;
    private static final int SHT_INIT_ARRAY = 14;
    private static final int SHT_FINI_ARRAY = 15;
    private static final int SHT_PREINIT_ARRAY = 16;
    private static final int SHT_GROUP = 17;
    private static final int SHT_SYMTAB_SHNDX = 18;
    private static final int SHT_RELR = 19;
    private static final int SHT_LOOS = 0x60000000;
    private static final int SHT_GNU_LIBLIST = 0x6ffffff7;
    private static final int SHT_GNU_VERDEF = 0x6ffffffd;
    private static final long SHF_INFO_LINK = 0x40;
    private static final long SHF_GNU_MBIND = 0x01000000;

    private HeaderConsistency() {
    }

    static void check(ParsedElf elf) throws ElfRewriteException {
        Section zero = elf.sections.get(0);
        if (!zero.equals(new Section(0, "", 0, 0, 0, 0, 0, 0, 0, 0, 0, 0))) {
            // Non-zero fields there mean extended numbering (not produced for executables) or damage.
            throw new ElfRewriteException("corrupt section header 0: it is not the all-zero null section");
        }
        requireAtMostOne(elf, Elf64.SHT_DYNSYM, ".dynsym");
        requireAtMostOne(elf, Elf64.SHT_DYNAMIC, ".dynamic");
        for (Section s : elf.sections.subList(1, elf.sections.size())) {
            if (s.type() == SHT_SYMTAB_SHNDX) {
                // Only needed by objects with more than 65279 sections; never by an executable.
                throw corrupt(s, "unsupported extended section index table (SHT_SYMTAB_SHNDX)");
            }
            checkLink(elf, s);
            checkInfo(elf, s);
            checkEntrySize(s);
        }
        checkProgramHeaders(elf);
    }

    private static void checkLink(ParsedElf elf, Section s) throws ElfRewriteException {
        boolean executable = elf.elfType == Elf64.ET_EXEC || elf.elfType == Elf64.ET_DYN;
        switch (s.type()) {
            case Elf64.SHT_RELA, SHT_REL -> {
                if (!(s.link() == 0 && executable)) {
                    requireLinkType(elf, s, "a symbol table", Elf64.SHT_SYMTAB, Elf64.SHT_DYNSYM);
                }
            }
            case SHT_SYMTAB_SHNDX, SHT_GROUP, SHT_HASH, Elf64.SHT_GNU_HASH, Elf64.SHT_GNU_VERSYM ->
                    requireLinkType(elf, s, "a symbol table", Elf64.SHT_SYMTAB, Elf64.SHT_DYNSYM);
            case Elf64.SHT_DYNAMIC, Elf64.SHT_SYMTAB, Elf64.SHT_DYNSYM, Elf64.SHT_GNU_VERNEED, SHT_GNU_VERDEF,
                    SHT_GNU_LIBLIST -> requireLinkType(elf, s, "a string table", Elf64.SHT_STRTAB, Elf64.SHT_STRTAB);
            case SHT_INIT_ARRAY, SHT_FINI_ARRAY, SHT_PREINIT_ARRAY -> {
                if (s.link() != 0) {
                    throw corrupt(s, "sh_link must be 0");
                }
            }
            default -> { }
        }
    }

    private static void requireLinkType(ParsedElf elf, Section s, String what, int type, int otherType)
            throws ElfRewriteException {
        int link = s.link();
        int linkedType = link > 0 && link < elf.sections.size() ? elf.sections.get(link).type() : -1;
        if (linkedType != type && linkedType != otherType) {
            throw corrupt(s, "sh_link " + Integer.toUnsignedString(link) + " should index " + what);
        }
    }

    private static void checkInfo(ParsedElf elf, Section s) throws ElfRewriteException {
        int info = s.info();
        switch (s.type()) {
            case Elf64.SHT_RELA, SHT_REL -> {
                if (info == 0 && (elf.elfType == Elf64.ET_EXEC || elf.elfType == Elf64.ET_DYN)) {
                    return; // dynamic relocations apply to segments, not to one section
                }
                if (info <= 0 || info >= elf.sections.size()) {
                    throw corrupt(s, "sh_info " + Integer.toUnsignedString(info) + " is out of range");
                }
                int target = elf.sections.get(info).type();
                if (!List.of(SHT_PROGBITS, Elf64.SHT_NOBITS, SHT_NOTE, SHT_INIT_ARRAY, SHT_FINI_ARRAY,
                        SHT_PREINIT_ARRAY).contains(target) && Integer.compareUnsigned(target, SHT_LOOS) < 0) {
                    throw corrupt(s, "sh_info " + Integer.toUnsignedString(info) + " should index a relocated section");
                }
            }
            case Elf64.SHT_DYNAMIC, SHT_HASH, SHT_SYMTAB_SHNDX, SHT_INIT_ARRAY, SHT_FINI_ARRAY, SHT_PREINIT_ARRAY -> {
                if (info != 0) {
                    throw corrupt(s, "sh_info must be 0");
                }
            }
            case SHT_GROUP, Elf64.SHT_SYMTAB, Elf64.SHT_DYNSYM, Elf64.SHT_NOBITS -> { }
            default -> {
                if ((s.flags() & SHF_INFO_LINK) != 0) {
                    if (info < 1 || info >= elf.sections.size()) {
                        throw corrupt(s, "sh_info should index another section");
                    }
                } else if (Integer.compareUnsigned(s.type(), SHT_LOOS) < 0 && (s.flags() & SHF_GNU_MBIND) == 0
                        && info != 0) {
                    throw corrupt(s, "sh_info must be 0");
                }
            }
        }
    }

    private static void requireAtMostOne(ParsedElf elf, int type, String name) throws ElfRewriteException {
        if (elf.sections.stream().filter(s -> s.type() == type).count() > 1) {
            throw new ElfRewriteException("corrupt: more than one section has the type of " + name);
        }
    }

    /** Tables of fixed-size entries must say so, and hold whole entries. */
    private static void checkEntrySize(Section s) throws ElfRewriteException {
        long expected = switch (s.type()) {
            case Elf64.SHT_SYMTAB, Elf64.SHT_DYNSYM, Elf64.SHT_RELA -> 24;
            case SHT_REL, Elf64.SHT_DYNAMIC -> 16;
            case SHT_RELR -> 8;
            case SHT_GROUP -> 4;
            case Elf64.SHT_GNU_VERSYM -> 2;
            default -> 0;
        };
        if (expected != 0 && (s.entsize() != expected || Long.remainderUnsigned(s.size(), expected) != 0)) {
            throw corrupt(s, "entry size " + Long.toUnsignedString(s.entsize()) + " and size "
                    + Long.toUnsignedString(s.size()) + " do not describe whole " + expected + "-byte entries");
        }
    }

    private static void checkProgramHeaders(ParsedElf elf) throws ElfRewriteException {
        boolean loadSeen = false;
        int dynamicSegments = 0;
        for (int i = 0; i < elf.segments.size(); i++) {
            Segment s = elf.segments.get(i);
            switch (s.type()) {
                case Elf64.PT_LOAD -> loadSeen = true;
                case Elf64.PT_PHDR -> {
                    if (i > 0 && loadSeen) {
                        throw new ElfRewriteException("corrupt program headers: PT_PHDR comes after a PT_LOAD");
                    }
                    if (!coveredByLoad(elf, s)) {
                        throw new ElfRewriteException("corrupt program headers: PT_PHDR is not covered by a PT_LOAD");
                    }
                }
                case Elf64.PT_DYNAMIC -> dynamicSegments++;
                case Elf64.PT_INTERP -> requireTerminatedInterpreter(elf, s, i);
                default -> { }
            }
        }
        if (dynamicSegments > 1) {
            throw new ElfRewriteException("corrupt program headers: more than one PT_DYNAMIC");
        }
    }

    private static boolean coveredByLoad(ParsedElf elf, Segment phdr) {
        for (Segment load : elf.segments.subList(1, elf.segments.size())) {
            if (load.isLoad() && Long.compareUnsigned(load.offset(), phdr.offset()) <= 0
                    && Long.compareUnsigned(load.offset() + load.filesz(), phdr.offset() + phdr.filesz()) >= 0
                    && Long.compareUnsigned(load.vaddr(), phdr.vaddr()) <= 0
                    && Long.compareUnsigned(load.vaddr() + load.filesz(), phdr.vaddr() + phdr.filesz()) >= 0) {
                return true;
            }
        }
        return false;
    }

    private static void requireTerminatedInterpreter(ParsedElf elf, Segment interp, int index)
            throws ElfRewriteException {
        if (interp.filesz() < 2 || elf.bytes.u8(interp.offset(), "PT_INTERP") == 0
                || elf.bytes.u8(interp.offset() + interp.filesz() - 1, "PT_INTERP") != 0) {
            throw new ElfRewriteException("corrupt " + interp.describe(index)
                    + ": the program interpreter path is not a terminated string");
        }
    }

    private static ElfRewriteException corrupt(Section s, String problem) {
        return new ElfRewriteException("corrupt " + s.describe() + ": " + problem);
    }
}
