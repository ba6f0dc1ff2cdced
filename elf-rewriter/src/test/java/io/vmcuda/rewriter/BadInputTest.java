package io.vmcuda.rewriter;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Every kind of input that cannot be rewritten: the CLI exits 2 with one line naming the problem, the API
 * throws ElfRewriteException with that line, check() refuses with it, and no output file appears.
 */
class BadInputTest {
    @TempDir
    Path temp;

    private record CliRun(int exitCode, String stdout, String stderr) {
    }

    private static CliRun cli(String... args) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int code = RewriteCli.run(args, new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8));
        return new CliRun(code, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
    }

    /** Asserts the refusal through all three entry points and returns the reason. */
    private String assertRefused(Path input, String expectedFragment) throws IOException {
        Path output = temp.resolve("output");
        CliRun run = cli(input.toString(), output.toString());
        assertEquals(2, run.exitCode(), run::toString);
        assertEquals("", run.stdout());
        String line = run.stderr();
        assertTrue(line.endsWith("\n") && line.indexOf('\n') == line.length() - 1, "one line: " + line);
        assertTrue(line.startsWith("vmcuda-rewrite: " + input + ": "), line);
        assertTrue(line.contains(expectedFragment), "expected '" + expectedFragment + "' in: " + line);
        assertFalse(line.contains("Exception") || line.contains("\tat "), "no stack trace: " + line);
        assertFalse(Files.exists(output), "no output for refused input");

        CliRun check = cli("--check", input.toString());
        assertEquals(2, check.exitCode(), check::toString);
        assertTrue(check.stderr().contains(expectedFragment), check::toString);

        ElfRewriteException e = assertThrows(ElfRewriteException.class, () -> ElfRewriter.rewrite(input, output));
        assertTrue(e.getMessage().contains(expectedFragment), e.getMessage());
        assertFalse(e.getMessage().contains("\n"));
        Admission admission = ElfRewriter.check(input);
        assertFalse(admission.ok());
        assertEquals(e.getMessage(), admission.reason());
        try (var files = Files.list(temp)) {
            assertTrue(files.noneMatch(p -> p.getFileName().toString().endsWith(".tmp")), "no temporary left over");
        }
        return e.getMessage();
    }

    private Path file(String name, byte[] content) throws IOException {
        return Files.write(temp.resolve(name), content);
    }

    private Path truncatedCopy(Path from, int length) throws IOException {
        return file("truncated_" + length, Arrays.copyOf(Files.readAllBytes(from), length));
    }

    @Test
    void emptyFile() throws IOException {
        assertRefused(file("empty", new byte[0]), "empty file");
    }

    @Test
    void notElf() throws IOException {
        assertRefused(file("script.sh", "#!/bin/sh\necho hi\n".getBytes(StandardCharsets.US_ASCII)), "not an ELF file");
    }

    @Test
    void truncatedEverywhere() throws IOException {
        Path original = Fixtures.helloPie();
        long size = Files.size(original);
        assertRefused(truncatedCopy(original, 40), "truncated");
        // Cut inside the program headers, inside the loaded tables, and just before the section headers.
        for (int length : new int[] {100, 2000, (int) size / 2, (int) size - 1}) {
            assertRefused(truncatedCopy(original, length), "beyond the end of the file");
        }
    }

    @Test
    void thirtyTwoBit() throws IOException {
        Path input = temp.resolve("elf32");
        ProgramHeaderSurgery.patchedCopy(Fixtures.helloPie(), input, b -> b.put(4, (byte) 1));
        assertRefused(input, "32-bit");
    }

    @Test
    void notX86_64() throws IOException {
        Path input = temp.resolve("aarch64");
        ProgramHeaderSurgery.patchedCopy(Fixtures.helloPie(), input, b -> b.putShort(18, (short) 183));
        assertRefused(input, "not an x86-64 executable (e_machine 183)");
    }

    @Test
    void staticallyLinked() throws IOException {
        assertRefused(Fixtures.helloStatic(), "statically linked");
    }

    @Test
    void sharedLibrary() throws IOException {
        assertRefused(Fixtures.sharedLibrary(), "a shared library");
    }

    @Test
    void objectFile() throws IOException {
        assertRefused(Fixtures.objectFile(), "relocatable object");
    }

    @Test
    void noLibcStartMainImport() throws IOException {
        assertRefused(Fixtures.noLibcStartMain(), "does not import __libc_start_main");
    }

    @Test
    void noSpareProgramHeader() throws IOException {
        Path input = temp.resolve("no_notes");
        ProgramHeaderSurgery.withoutNotes(Fixtures.helloPie(), input);
        assertRefused(input, "no spare program header");
    }

    @Test
    void alreadyRewritten() throws Exception {
        Path once = temp.resolve("once");
        ElfRewriter.rewrite(Fixtures.helloPie(), once);
        assertRefused(once, "already rewritten: its first DT_NEEDED is libvmcuda-worker.so");
    }

    @Test
    void alreadyImportsTheEntrySymbol() throws Exception {
        Path once = temp.resolve("once");
        ElfRewriter.rewrite(Fixtures.helloPie(), once, "libsomething.so", ElfRewriter.DEFAULT_ENTRY_SYMBOL);
        assertRefused(once, "already imports vmcuda_worker_start_main");
    }

    @Test
    void segmentBeyondEndOfFile() throws IOException {
        Path input = temp.resolve("segment_beyond_end");
        ProgramHeaderSurgery.withSegmentBeyondEnd(Fixtures.helloPie(), input);
        assertRefused(input, "PT_LOAD) (offset");
    }

    @Test
    void sectionBeyondEndOfFile() throws IOException {
        Path input = temp.resolve("section_beyond_end");
        ProgramHeaderSurgery.patchedCopy(Fixtures.helloPie(), input, b -> {
            long shoff = b.getLong(40);
            b.putLong((int) shoff + 64 + 24, 1L << 40); // section 1's sh_offset
        });
        assertRefused(input, "section 1 (offset 0x10000000000");
    }

    @Test
    void sectionNameStringTableIndexOutOfRange() throws IOException {
        Path input = temp.resolve("bad_shstrndx");
        ProgramHeaderSurgery.patchedCopy(Fixtures.helloPie(), input, b -> b.putShort(62, (short) 999));
        assertRefused(input, "section name string table index 999 is out of range");
    }

    @Test
    void dynamicStringOffsetOutOfRange() throws IOException {
        Path input = temp.resolve("bad_needed");
        ProgramHeaderSurgery.patchedCopy(Fixtures.helloPie(), input, b -> {
            ProgramHeaderSurgery.forEachProgramHeader(b, (at, type) -> {
                if (type == 2) { // PT_DYNAMIC: the first entry is DT_NEEDED libc.so.6
                    int dynamic = (int) b.getLong(at + 8);
                    b.putLong(dynamic + 8, 0x7fff_0000L);
                }
            });
        });
        assertRefused(input, "beyond section 7 (.dynstr)");
    }

    @Test
    void directoryIsNotAnExecutable() throws IOException {
        assertRefused(Files.createDirectory(temp.resolve("dir")), "not a regular file");
    }

    @Test
    void missingInputIsAnIoErrorNotARefusal() {
        CliRun run = cli(temp.resolve("missing").toString(), temp.resolve("out").toString());
        assertEquals(1, run.exitCode(), run::toString);
        assertTrue(run.stderr().startsWith("vmcuda-rewrite: ") && run.stderr().contains("NoSuchFileException"),
                run::toString);
        assertThrows(IOException.class, () -> ElfRewriter.check(temp.resolve("missing")));
    }

    @Test
    void outputMayNotBeTheInput() throws IOException {
        Path copy = Files.copy(Fixtures.helloPie(), temp.resolve("copy"));
        byte[] before = Files.readAllBytes(copy);
        ElfRewriteException e = assertThrows(ElfRewriteException.class, () -> ElfRewriter.rewrite(copy, copy));
        assertTrue(e.getMessage().contains("never modifies its input"));
        assertTrue(Arrays.equals(before, Files.readAllBytes(copy)));
    }

    @Test
    void usageErrorsExit2WithOneLine() {
        for (String[] args : new String[][] {{}, {"a"}, {"--check"}, {"--bogus", "a", "b"}, {"--needed"}}) {
            CliRun run = cli(args);
            assertEquals(2, run.exitCode(), Arrays.toString(args));
            assertTrue(run.stderr().startsWith("vmcuda-rewrite: ") && run.stderr().contains("usage:"), run.stderr());
            assertEquals(1, run.stderr().lines().count());
        }
    }

    @Test
    void checkSaysWhyAGoodBinaryCanBeRewritten() throws IOException {
        CliRun run = cli("--check", Fixtures.helloNoPie().toString());
        assertEquals(0, run.exitCode(), run::toString);
        assertTrue(run.stdout().contains(": can be rewritten: non-PIE executable; __libc_start_main"
                + " (GLIBC_2.34 from libc.so.6) becomes vmcuda_worker_start_main"), run.stdout());
        assertTrue(ElfRewriter.check(Fixtures.helloNoPie()).ok());
    }
}
