package io.vmcuda.rewriter;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * The complete set of byte changes that turn the input into the rewritten program. The output is the input,
 * byte for byte, with these patches applied and {@link #appended} written at {@link #appendOffset}:
 * <ul>
 * <li>appended: a copy of .dynamic with DT_NEEDED(needed) first and DT_STRTAB/DT_STRSZ pointing at the
 *     appended copy of .dynstr, which ends with the two new strings (needed, entry symbol). .dynstr has no
 *     free room in place, and growing it in place would move every table after it.</li>
 * <li>program headers: a spare header (PT_NULL, else a PT_NOTE) becomes the PT_LOAD mapping the appended
 *     bytes, kept after all other PT_LOADs so they stay sorted by address; PT_DYNAMIC points at the new
 *     .dynamic. The table itself does not move, so PT_PHDR and the first PT_LOAD still cover it.</li>
 * <li>section headers of .dynamic and .dynstr describe the new copies (sh_link unchanged), so readelf and
 *     other tools stay coherent.</li>
 * <li>.dynsym: __libc_start_main's st_name now names the entry symbol; .gnu.version marks it global so
 *     the worker's unversioned definition satisfies it. .gnu.version_r is untouched and stays valid.</li>
 * </ul>
 * The old .dynamic and .dynstr stay in place, unchanged: code that refers to {@code _DYNAMIC} (rare in
 * executables; glibc's ld.so no longer reads GOT[0]) sees the old, still well-formed table.
 */
final class RewritePlan {
    private static final long PAGE_SIZE = 4096;
    /** Keep the new segment inside the 47-bit user address space of x86-64. */
    private static final long MAX_USER_ADDRESS = 1L << 47;

    final long phoff;
    final List<Segment> programHeaders;
    final long shoff;
    final List<Section> movedSections;
    final long symbolNameField;
    final int newSymbolName;
    final Optional<Long> versionField;
    final long appendOffset;
    final byte[] appended;
    final String summary;

    private RewritePlan(long phoff, List<Segment> programHeaders, long shoff, List<Section> movedSections,
                        long symbolNameField, int newSymbolName, Optional<Long> versionField, long appendOffset,
                        byte[] appended, String summary) {
        this.phoff = phoff;
        this.programHeaders = programHeaders;
        this.shoff = shoff;
        this.movedSections = movedSections;
        this.symbolNameField = symbolNameField;
        this.newSymbolName = newSymbolName;
        this.versionField = versionField;
        this.appendOffset = appendOffset;
        this.appended = appended;
        this.summary = summary;
    }

    static RewritePlan make(StartImport program, String needed, String entrySymbol) throws ElfRewriteException {
        ParsedElf elf = program.elf;
        int spare = spareProgramHeader(elf);
        int lastLoad = lastLoadIndex(elf);

        byte[] oldStrings = elf.bytes.copy(program.symbols.strings.section.offset(),
                program.symbols.strings.section.size(), ".dynstr");
        byte[] neededBytes = (needed + "\0").getBytes(StandardCharsets.UTF_8);
        byte[] entryBytes = (entrySymbol + "\0").getBytes(StandardCharsets.UTF_8);
        int neededName = oldStrings.length;
        int entryName = neededName + neededBytes.length;
        int stringsSize = entryName + entryBytes.length;
        int dynamicSize = program.dynamic.raw.length + Elf64.DYN_SIZE;

        long alignment = loadAlignment(elf);
        long appendOffset = alignUp(elf.bytes.size(), PAGE_SIZE);
        long address = alignUp(endOfLoads(elf), alignment) + appendOffset % alignment;
        if (address < 0 || address + dynamicSize + stringsSize > MAX_USER_ADDRESS) {
            throw new ElfRewriteException("no room in the address space after the last PT_LOAD");
        }
        long stringsAddress = address + dynamicSize;

        // ld.so writes into .dynamic: DT_DEBUG's value (the r_debug address) always, and for a
        // position-independent program the d_ptr entries are relocated in place by glibc < 2.35 (and by
        // later ones unless PT_DYNAMIC lacks PF_W). Read-only only when neither can happen.
        boolean writable = program.dynamic.has(Elf64.DT_DEBUG) || elf.elfType == Elf64.ET_DYN;
        int flags = Elf64.PF_R | (writable ? Elf64.PF_W : 0);

        byte[] appended = new byte[dynamicSize + stringsSize];
        ByteBuffer out = ByteBuffer.wrap(appended).order(ByteOrder.LITTLE_ENDIAN);
        out.putLong(Elf64.DT_NEEDED).putLong(neededName);
        ByteBuffer oldDynamic = ByteBuffer.wrap(program.dynamic.raw).order(ByteOrder.LITTLE_ENDIAN);
        for (int at = 0; at < program.dynamic.raw.length; at += Elf64.DYN_SIZE) {
            long tag = oldDynamic.getLong(at);
            long value = oldDynamic.getLong(at + 8);
            if (at < program.dynamic.entries.size() * Elf64.DYN_SIZE) {
                value = tag == Elf64.DT_STRTAB ? stringsAddress : tag == Elf64.DT_STRSZ ? stringsSize : value;
            }
            out.putLong(tag).putLong(value);
        }
        out.put(oldStrings).put(neededBytes).put(entryBytes);

        Segment ptDynamic = elf.firstSegment(Elf64.PT_DYNAMIC).orElseThrow();
        Segment newDynamic = new Segment(Elf64.PT_DYNAMIC, writable ? ptDynamic.flags() : Elf64.PF_R,
                appendOffset, address, address, dynamicSize, dynamicSize, 8);
        Segment newLoad = new Segment(Elf64.PT_LOAD, flags, appendOffset, address, address, appended.length,
                appended.length, alignment);
        List<Segment> headers = new ArrayList<>(elf.segments);
        headers.replaceAll(s -> s == ptDynamic ? newDynamic : s);
        if (spare > lastLoad) {
            headers.set(spare, newLoad);
        } else {
            // Move the spare slot after the last PT_LOAD: PT_LOADs must stay sorted by address.
            headers.remove(spare);
            headers.add(lastLoad, newLoad);
        }

        Section dynamicSection = program.dynamic.section.movedTo(appendOffset, address, dynamicSize);
        Section stringsSection = program.symbols.strings.section.movedTo(appendOffset + dynamicSize,
                stringsAddress, stringsSize);

        String summary = (elf.elfType == Elf64.ET_DYN ? "PIE" : "non-PIE") + " executable; "
                + StartImport.LIBC_START_MAIN + " (" + program.version + ") becomes " + entrySymbol + "; "
                + needed + " becomes the first of " + (program.neededLibraries.size() + 1) + " DT_NEEDED; "
                + (writable ? "read-write" : "read-only") + " PT_LOAD of " + appended.length + " bytes at 0x"
                + Long.toHexString(address);
        return new RewritePlan(elf.phoff, List.copyOf(headers), elf.shoff, List.of(dynamicSection, stringsSection),
                program.symbols.entryOffset(program.symbolIndex), entryName,
                program.versions.entryOffset(program.symbolIndex), appendOffset, appended, summary);
    }

    /** PT_NULL first; else the PT_NOTE duplicated by PT_GNU_PROPERTY (that one stays described); else the last PT_NOTE. */
    private static int spareProgramHeader(ParsedElf elf) throws ElfRewriteException {
        List<Segment> s = elf.segments;
        Optional<Segment> property = elf.firstSegment(Elf64.PT_GNU_PROPERTY);
        int lastNote = -1;
        int propertyNote = -1;
        for (int i = 0; i < s.size(); i++) {
            if (s.get(i).type() == 0) {
                return i;
            }
            if (s.get(i).type() == Elf64.PT_NOTE) {
                lastNote = i;
                if (property.isPresent() && property.get().offset() == s.get(i).offset()
                        && property.get().filesz() == s.get(i).filesz()) {
                    propertyNote = i;
                }
            }
        }
        if (lastNote < 0) {
            throw new ElfRewriteException("no spare program header (no PT_NOTE or PT_NULL) to map the new"
                    + " .dynamic and .dynstr");
        }
        return propertyNote >= 0 ? propertyNote : lastNote;
    }

    private static int lastLoadIndex(ParsedElf elf) throws ElfRewriteException {
        long previous = Long.MIN_VALUE;
        int last = -1;
        for (int i = 0; i < elf.segments.size(); i++) {
            Segment s = elf.segments.get(i);
            if (s.isLoad()) {
                if (s.vaddr() < previous) {
                    throw new ElfRewriteException("corrupt program headers: PT_LOAD segments are not sorted by address");
                }
                previous = s.vaddr();
                last = i;
            }
        }
        if (last < 0) {
            throw new ElfRewriteException("corrupt: no PT_LOAD segment");
        }
        return last;
    }

    private static long loadAlignment(ParsedElf elf) throws ElfRewriteException {
        long alignment = PAGE_SIZE;
        for (Segment s : elf.segments) {
            if (s.isLoad() && s.align() > alignment) {
                alignment = s.align();
            }
        }
        if (alignment > (1L << 30)) {
            throw new ElfRewriteException("unsupported: PT_LOAD alignment 0x" + Long.toHexString(alignment));
        }
        return alignment;
    }

    private static long endOfLoads(ParsedElf elf) {
        long end = 0;
        for (Segment s : elf.segments) {
            if (s.isLoad()) {
                end = Math.max(end, s.vaddr() + s.memsz());
            }
        }
        return end;
    }

    private static long alignUp(long value, long alignment) {
        return (value + alignment - 1) & -alignment;
    }
}
