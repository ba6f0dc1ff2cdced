package io.vmcuda.rewriter;

import java.nio.MappedByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import net.fornwall.jelf.ElfFile;
import net.fornwall.jelf.ElfSegment;

/**
 * The ELF header, program headers and section headers of an x86-64 ELF64 file, checked for consistency
 * (every table and every section/segment inside the file, indexes in range).
 *
 * <p>jelf parses the ELF header and the program headers. It reads lazily through an int-positioned buffer,
 * so an offset beyond the file would make it read garbage or throw unchecked exceptions: the raw range
 * checks here run before jelf is asked for a table, and whatever jelf still throws becomes an
 * {@link ElfRewriteException}.
 */
final class ParsedElf {
    private static final byte[] ELF_MAGIC = {0x7f, 'E', 'L', 'F'};

    final FileBytes bytes;
    final int elfType;
    final long phoff;
    final long shoff;
    final List<Segment> segments;
    final List<Section> sections;

    private ParsedElf(FileBytes bytes, int elfType, long phoff, long shoff, List<Segment> segments,
                      List<Section> sections) {
        this.bytes = bytes;
        this.elfType = elfType;
        this.phoff = phoff;
        this.shoff = shoff;
        this.segments = segments;
        this.sections = sections;
    }

    /**
     * @param forJelf a mapping of the same file handed to jelf (jelf moves its position)
     */
    static ParsedElf parse(FileBytes bytes, MappedByteBuffer forJelf) throws ElfRewriteException {
        checkIdentity(bytes);
        ElfFile elf = jelf("ELF header", () -> ElfFile.from(forJelf));
        int elfType = Short.toUnsignedInt(elf.e_type);
        switch (elfType) {
            case Elf64.ET_EXEC, Elf64.ET_DYN -> { }
            case Elf64.ET_REL -> throw new ElfRewriteException("a relocatable object file (.o), not an executable");
            case Elf64.ET_CORE -> throw new ElfRewriteException("a core dump, not an executable");
            default -> throw new ElfRewriteException("not an executable (ELF type " + elfType + ")");
        }
        List<Segment> segments = parseSegments(bytes, elf);
        List<Section> sections = parseSections(bytes, elf);
        ParsedElf parsed = new ParsedElf(bytes, elfType, elf.e_phoff, elf.e_shoff, segments, sections);
        HeaderConsistency.check(parsed);
        return parsed;
    }

    /** Magic, class, byte order and machine: checked on raw bytes so that the refusal names the real problem. */
    private static void checkIdentity(FileBytes bytes) throws ElfRewriteException {
        if (bytes.size() == 0) {
            throw new ElfRewriteException("empty file, not an ELF executable");
        }
        if (!bytes.matches(0, ELF_MAGIC)) {
            throw new ElfRewriteException("not an ELF file (no \\x7fELF magic)");
        }
        if (bytes.size() < Elf64.EHDR_SIZE) {
            throw new ElfRewriteException("truncated: the ELF header needs 64 bytes, the file has " + bytes.size());
        }
        int elfClass = bytes.u8(4, "EI_CLASS");
        if (elfClass == Elf64.ELFCLASS32) {
            throw new ElfRewriteException("a 32-bit ELF file: only 64-bit x86-64 executables are supported");
        }
        if (elfClass != Elf64.ELFCLASS64) {
            throw new ElfRewriteException("corrupt ELF header: invalid EI_CLASS " + elfClass);
        }
        int data = bytes.u8(5, "EI_DATA");
        if (data != Elf64.ELFDATA2LSB) {
            throw new ElfRewriteException("not a little-endian ELF file (EI_DATA " + data
                    + "): only x86-64 executables are supported");
        }
        if (bytes.u8(6, "EI_VERSION") != 1) {
            throw new ElfRewriteException("corrupt ELF header: EI_VERSION is not 1");
        }
        int machine = bytes.u16(18, "e_machine");
        if (machine != Elf64.EM_X86_64) {
            throw new ElfRewriteException("not an x86-64 executable (e_machine " + machine + ")");
        }
    }

    private static List<Segment> parseSegments(FileBytes bytes, ElfFile elf) throws ElfRewriteException {
        int phnum = Short.toUnsignedInt(elf.e_phnum);
        if (phnum == 0 || elf.e_phoff == 0) {
            throw new ElfRewriteException("no program headers: not an executable");
        }
        if (phnum == Elf64.PN_XNUM) {
            throw new ElfRewriteException("unsupported: more than 65534 program headers (PN_XNUM)");
        }
        if (Short.toUnsignedInt(elf.e_phentsize) != Elf64.PHDR_SIZE) {
            throw new ElfRewriteException("corrupt ELF header: e_phentsize is " + elf.e_phentsize + ", expected 56");
        }
        bytes.requireRange(elf.e_phoff, (long) phnum * Elf64.PHDR_SIZE, "program header table");
        List<Segment> segments = new ArrayList<>(phnum);
        for (int i = 0; i < phnum; i++) {
            int index = i;
            ElfSegment s = jelf("program header " + i, () -> elf.getProgramHeader(index));
            Segment segment = new Segment(s.p_type, s.p_flags, s.p_offset, s.p_vaddr, s.p_paddr, s.p_filesz,
                    s.p_memsz, s.p_align);
            checkSegment(bytes, segment, i);
            segments.add(segment);
        }
        return List.copyOf(segments);
    }

    private static void checkSegment(FileBytes bytes, Segment s, int index) throws ElfRewriteException {
        String what = s.describe(index);
        bytes.requireRange(s.offset(), s.filesz(), what);
        if (s.isLoad()) {
            if (Long.compareUnsigned(s.filesz(), s.memsz()) > 0) {
                throw new ElfRewriteException("corrupt " + what + ": file size is larger than memory size");
            }
            if (s.align() != 0 && (Long.bitCount(s.align()) != 1 || (s.vaddr() - s.offset()) % s.align() != 0)) {
                throw new ElfRewriteException("corrupt " + what + ": address and offset disagree modulo p_align 0x"
                        + Long.toHexString(s.align()));
            }
            if (s.vaddr() < 0 || s.memsz() < 0 || s.vaddr() + s.memsz() < 0) {
                throw new ElfRewriteException("corrupt " + what + ": address range overflows");
            }
        }
    }

    /**
     * Section headers are read here rather than through jelf: jelf's getSection() also parses the section's
     * contents by type (hash tables, notes, symbol tables), and on corrupt contents it allocates arrays sized
     * by untrusted counts, which can exhaust the heap before any exception is thrown.
     */
    private static List<Section> parseSections(FileBytes bytes, ElfFile elf) throws ElfRewriteException {
        int shnum = Short.toUnsignedInt(elf.e_shnum);
        if (shnum == 0 || elf.e_shoff == 0) {
            throw new ElfRewriteException("no section header table (stripped with sstrip?): cannot locate .dynstr");
        }
        if (Short.toUnsignedInt(elf.e_shentsize) != Elf64.SHDR_SIZE) {
            throw new ElfRewriteException("corrupt ELF header: e_shentsize is " + elf.e_shentsize + ", expected 64");
        }
        bytes.requireRange(elf.e_shoff, (long) shnum * Elf64.SHDR_SIZE, "section header table");
        int shstrndx = Short.toUnsignedInt(elf.e_shstrndx);
        if (shstrndx == 0 || shstrndx >= shnum) {
            throw new ElfRewriteException("corrupt ELF header: section name string table index " + shstrndx
                    + " is out of range (" + shnum + " sections)");
        }
        List<Section> unnamed = new ArrayList<>(shnum);
        for (int i = 0; i < shnum; i++) {
            Section s = readSectionHeader(bytes, elf.e_shoff + (long) i * Elf64.SHDR_SIZE, i, "");
            if (i > 0 && s.occupiesFile()) {
                bytes.requireRange(s.offset(), s.size(), s.describe());
            }
            if (Integer.toUnsignedLong(s.link()) >= shnum) {
                throw new ElfRewriteException("corrupt section header " + i + ": sh_link "
                        + Integer.toUnsignedString(s.link()) + " is out of range (" + shnum + " sections)");
            }
            unnamed.add(s);
        }
        StringTable names = new StringTable(bytes, unnamed.get(shstrndx));
        List<Section> sections = new ArrayList<>(shnum);
        for (Section s : unnamed) {
            String name = s.index() == 0 ? "" : names.at(Integer.toUnsignedLong(s.nameOffset()),
                    "the name of section " + s.index());
            sections.add(new Section(s.index(), name, s.nameOffset(), s.type(), s.flags(), s.addr(), s.offset(),
                    s.size(), s.link(), s.info(), s.addralign(), s.entsize()));
        }
        return List.copyOf(sections);
    }

    private static Section readSectionHeader(FileBytes b, long at, int index, String name) throws ElfRewriteException {
        String what = "section header " + index;
        return new Section(index, name, (int) b.u32(at, what), (int) b.u32(at + 4, what), b.u64(at + 8, what),
                b.u64(at + 16, what), b.u64(at + 24, what), b.u64(at + 32, what), (int) b.u32(at + 40, what),
                (int) b.u32(at + 44, what), b.u64(at + 48, what), b.u64(at + 56, what));
    }

    Optional<Segment> firstSegment(int type) {
        return segments.stream().filter(s -> s.type() == type).findFirst();
    }

    Optional<Section> firstSection(int type) {
        return sections.stream().filter(s -> s.type() == type).findFirst();
    }

    Optional<Section> sectionNamed(String name) {
        return sections.stream().filter(s -> s.name().equals(name)).findFirst();
    }

    /** Tools (readelf, gdb, strip) find the dynamic-linking sections by name as well as by type. */
    static void requireName(Section s, String expected) throws ElfRewriteException {
        if (!s.name().equals(expected)) {
            throw new ElfRewriteException("corrupt: section " + s.index() + " has the type of " + expected
                    + " but is named '" + s.name() + "'");
        }
    }

    Section section(int index, String what) throws ElfRewriteException {
        if (index <= 0 || index >= sections.size()) {
            throw new ElfRewriteException("corrupt: " + what + " refers to section index " + index
                    + ", out of range");
        }
        return sections.get(index);
    }

    /** The file offset holding virtual addresses [addr, addr+len), through the PT_LOAD that maps them. */
    long fileOffsetOf(long addr, long len, String what) throws ElfRewriteException {
        for (Segment s : segments) {
            if (s.isLoad() && s.mapsFileBytes(addr, len)) {
                return s.fileOffsetOf(addr);
            }
        }
        throw new ElfRewriteException("corrupt: " + what + " (address 0x" + Long.toHexString(addr)
                + ") is not inside the file bytes of any PT_LOAD segment");
    }

    /** A section's bytes must be where the loader will find them: at its address, through a PT_LOAD. */
    void requireLoadedWhereItSays(Section s) throws ElfRewriteException {
        long offset = fileOffsetOf(s.addr(), s.size(), s.describe());
        if (offset != s.offset()) {
            throw new ElfRewriteException("corrupt " + s.describe() + ": its file offset 0x"
                    + Long.toHexString(s.offset()) + " disagrees with the PT_LOAD mapping its address 0x"
                    + Long.toHexString(s.addr()));
        }
    }

    @FunctionalInterface
    private interface JelfRead<T> {
        T read();
    }

    /** Runs a jelf read, turning whatever jelf throws on bad input into the rewriter's typed error. */
    private static <T> T jelf(String what, JelfRead<T> read) throws ElfRewriteException {
        try {
            return read.read();
        } catch (RuntimeException e) { // ElfException and whatever else jelf trips over on corrupt input
            throw new ElfRewriteException("corrupt " + what + ": " + oneLine(e));
        }
    }

    static String oneLine(Throwable e) {
        String message = e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage();
        return message.replace('\n', ' ').replace('\r', ' ');
    }
}
