package io.vmcuda.rewriter;

import java.io.IOException;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * What the dynamic loader needs to load an executable or shared library: its DT_NEEDED names, its search
 * path (DT_RUNPATH, or DT_RPATH when there is no RUNPATH, split at ':'), and its DT_SONAME. Read with the same
 * bounds checks as a rewrite: a malformed file gives an {@link ElfRewriteException} with the reason.
 *
 * @param soname empty when the object has none (an executable)
 */
public record ElfDependencies(List<String> needed, List<String> searchPath, String soname) {
    private static final long DT_SONAME = 14;
    private static final long DT_RPATH = 15;
    private static final long DT_RUNPATH = 29;

    /** A file with no PT_DYNAMIC (statically linked) needs nothing. */
    public static ElfDependencies read(Path file) throws ElfRewriteException, IOException {
        if (!Files.isRegularFile(file)) throw new ElfRewriteException("not a regular file");
        try (FileChannel in = FileChannel.open(file, StandardOpenOption.READ)) {
            long size = in.size();
            if (size > Integer.MAX_VALUE) throw new ElfRewriteException("unsupported: larger than 2 GiB (" + size + " bytes)");
            MappedByteBuffer mapped = in.map(FileChannel.MapMode.READ_ONLY, 0, size);
            ParsedElf elf = ParsedElf.parse(new FileBytes(mapped), in.map(FileChannel.MapMode.READ_ONLY, 0, size));
            Optional<Segment> ptDynamic = elf.firstSegment(Elf64.PT_DYNAMIC);
            if (ptDynamic.isEmpty()) return new ElfDependencies(List.of(), List.of(), "");
            DynamicTable dynamic = DynamicTable.read(elf, ptDynamic.get());
            StringTable strings = new StringTable(elf.bytes, elf.section(dynamic.section.link(), ".dynamic's sh_link"));
            List<String> needed = new ArrayList<>();
            String runpath = null, rpath = null, soname = "";
            for (DynamicTable.Entry e : dynamic.entries) {
                String what = ".dynamic entry with tag " + e.tag();
                if (e.tag() == Elf64.DT_NEEDED) needed.add(strings.at(e.value(), what));
                else if (e.tag() == DT_RUNPATH) runpath = strings.at(e.value(), what);
                else if (e.tag() == DT_RPATH) rpath = strings.at(e.value(), what);
                else if (e.tag() == DT_SONAME) soname = strings.at(e.value(), what);
            }
            String path = runpath != null ? runpath : rpath; // ld.so ignores DT_RPATH when DT_RUNPATH is present
            List<String> search = path == null || path.isEmpty() ? List.of() : List.of(path.split(":"));
            return new ElfDependencies(List.copyOf(needed), search, soname);
        }
    }
}
