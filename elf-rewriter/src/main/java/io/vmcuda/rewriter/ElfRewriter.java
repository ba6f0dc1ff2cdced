package io.vmcuda.rewriter;

import java.io.IOException;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/**
 * Rewrites a dynamically linked x86-64 executable so that it runs inside the vmcuda worker: the worker
 * library becomes its first DT_NEEDED (so it interposes on libcudart's registration entry points), and the
 * program enters the worker's entry symbol instead of glibc's {@code __libc_start_main}. The program's
 * constructors (CUDA registration included) still run; its {@code main} does not.
 *
 * <p>The input is memory-mapped and never modified. Everything wrong with the input's content is reported
 * as {@link ElfRewriteException} (or a refused {@link Admission}) with a one-line reason.
 */
public final class ElfRewriter {
    public static final String DEFAULT_NEEDED = "libvmcuda-worker.so";
    public static final String DEFAULT_ENTRY_SYMBOL = "vmcuda_worker_start_main";

    private ElfRewriter() {
    }

    /** Never throws for bad input: returns Admission.accepted() or Admission.refused(oneLineReason). */
    public static Admission check(Path input) throws IOException {
        try {
            describe(input, DEFAULT_NEEDED, DEFAULT_ENTRY_SYMBOL);
            return Admission.accepted();
        } catch (ElfRewriteException e) {
            return Admission.refused(e.getMessage());
        }
    }

    /** Writes OUTPUT (0755) atomically (temp file + rename in the same directory). */
    public static void rewrite(Path input, Path output) throws ElfRewriteException, IOException {
        rewrite(input, output, DEFAULT_NEEDED, DEFAULT_ENTRY_SYMBOL);
    }

    public static void rewrite(Path input, Path output, String needed, String entrySymbol)
            throws ElfRewriteException, IOException {
        requireName("needed library", needed);
        requireName("entry symbol", entrySymbol);
        if (Files.exists(output) && Files.isSameFile(input, output)) {
            throw new ElfRewriteException("the output is the input file: the rewriter never modifies its input");
        }
        try (FileChannel in = open(input)) {
            RewritePlan plan = plan(in, needed, entrySymbol);
            RewriteWriter.write(in, plan, output);
        }
    }

    /** What a rewrite would do, in one line (for {@code --check}); throws the refusal otherwise. */
    static String describe(Path input, String needed, String entrySymbol) throws ElfRewriteException, IOException {
        requireName("needed library", needed);
        requireName("entry symbol", entrySymbol);
        try (FileChannel in = open(input)) {
            return plan(in, needed, entrySymbol).summary;
        }
    }

    private static FileChannel open(Path input) throws ElfRewriteException, IOException {
        if (Files.exists(input) && !Files.isRegularFile(input)) {
            throw new ElfRewriteException("not a regular file");
        }
        return FileChannel.open(input, StandardOpenOption.READ);
    }

    private static RewritePlan plan(FileChannel in, String needed, String entrySymbol)
            throws ElfRewriteException, IOException {
        long size = in.size();
        if (size > Integer.MAX_VALUE) {
            throw new ElfRewriteException("unsupported: larger than 2 GiB (" + size + " bytes)");
        }
        MappedByteBuffer mapped = in.map(FileChannel.MapMode.READ_ONLY, 0, size);
        // jelf moves the position of the buffer it is given; FileBytes reads absolutely from its own view.
        ParsedElf elf = ParsedElf.parse(new FileBytes(mapped), in.map(FileChannel.MapMode.READ_ONLY, 0, size));
        StartImport program = StartImport.find(elf, needed, entrySymbol);
        return RewritePlan.make(program, needed, entrySymbol);
    }

    private static void requireName(String what, String name) {
        if (name == null || name.isEmpty() || !name.chars().allMatch(c -> c > 0x20 && c < 0x7f)) {
            throw new IllegalArgumentException(what + " must be a non-empty printable ASCII name: " + name);
        }
    }
}
