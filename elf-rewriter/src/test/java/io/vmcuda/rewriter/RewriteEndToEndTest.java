package io.vmcuda.rewriter;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/** Rewritten programs start in the worker stub: constructors run, the stub's main runs, theirs does not. */
class RewriteEndToEndTest {
    @TempDir
    Path temp;

    static Stream<Arguments> programs() {
        return Stream.of(
                Arguments.of("PIE", (Supplier<Path>) Fixtures::helloPie),
                Arguments.of("non-PIE", (Supplier<Path>) Fixtures::helloNoPie),
                Arguments.of("BIND_NOW+RELRO", (Supplier<Path>) Fixtures::helloNowRelro),
                Arguments.of("SysV and GNU hash", (Supplier<Path>) Fixtures::helloSysvHash),
                Arguments.of("C++ with libstdc++", (Supplier<Path>) Fixtures::helloCxx));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("programs")
    void rewrittenProgramStartsInTheWorkerAndKeepsItsConstructors(String kind, Supplier<Path> fixture)
            throws Exception {
        Path original = fixture.get();
        byte[] originalBytes = Files.readAllBytes(original);
        Path rewritten = temp.resolve("rewritten");

        ElfRewriter.rewrite(original, rewritten);

        Processes.Result run = Processes.run(List.of(rewritten.toString(), "first arg", "second"),
                Map.of("LD_LIBRARY_PATH", Fixtures.workerStubDir().toString()));
        assertEquals(0, run.exitCode(), run::toString);
        assertTrue(run.stdout().startsWith("constructor ran\n"), run::toString);
        assertTrue(run.stdout().contains("stub main ran argc=3 [first arg] [second]\n"), run::toString);
        assertFalse(run.stdout().contains("original main"), run::toString);

        assertEquals("", Readelf.complaints(List.of(rewritten)));
        List<String> needed = Readelf.neededLibraries(rewritten);
        assertEquals(ElfRewriter.DEFAULT_NEEDED, needed.get(0));
        assertEquals(Readelf.neededLibraries(original), needed.subList(1, needed.size()),
                "the original dependencies follow, in order");
        assertEquals("rwxr-xr-x", PosixFilePermissions.toString(Files.getPosixFilePermissions(rewritten)));

        assertArrayEquals(originalBytes, Files.readAllBytes(original), "the input is never modified");
        Processes.Result originalRun = Processes.run(List.of(original.toString(), "x"));
        assertEquals(0, originalRun.exitCode(), originalRun::toString);
        assertTrue(originalRun.stdout().contains("original main ran argc=2 [x]"), originalRun::toString);
    }

    @Test
    void symbolVersionsAndDependenciesStayIntact() throws Exception {
        Path original = Fixtures.helloCxx();
        Path rewritten = temp.resolve("rewritten");
        ElfRewriter.rewrite(original, rewritten);

        String symbols = Readelf.dynamicSymbols(rewritten);
        assertTrue(symbols.contains(" vmcuda_worker_start_main\n"), "imported unversioned:\n" + symbols);
        assertFalse(symbols.contains("__libc_start_main"), symbols);
        for (String versioned : List.of("memcpy@GLIBC_2.14", "stat@GLIBC_2.33", "__cxa_throw@CXXABI_1.3",
                "__gxx_personality_v0@CXXABI_1.3")) {
            assertTrue(symbols.contains(versioned), versioned + " keeps its version:\n" + symbols);
        }
        assertTrue(symbols.contains("GLIBC_2.34"), "the version need stays declared:\n" + symbols);
    }

    @Test
    void rewritingTwiceToTheSamePathReplacesTheOutputAtomically() throws Exception {
        Path rewritten = temp.resolve("out");
        ElfRewriter.rewrite(Fixtures.helloPie(), rewritten);
        byte[] first = Files.readAllBytes(rewritten);
        ElfRewriter.rewrite(Fixtures.helloPie(), rewritten);
        assertArrayEquals(first, Files.readAllBytes(rewritten), "the rewrite is deterministic");
        try (Stream<Path> files = Files.list(temp)) {
            assertEquals(List.of(rewritten), files.toList(), "no temporary file is left behind");
        }
    }

    @Test
    void programHeadersAreMovedWhenTheSpareNoteComesBeforeTheLoads() throws Exception {
        Path reordered = temp.resolve("notes_first");
        ProgramHeaderSurgery.moveNotesBeforeLoads(Fixtures.helloPie(), reordered);
        assertEquals(0, Processes.run(List.of(reordered.toString())).exitCode(), "the reordered input is valid");
        Path rewritten = temp.resolve("rewritten");

        ElfRewriter.rewrite(reordered, rewritten);

        assertEquals("", Readelf.complaints(List.of(rewritten)));
        Processes.Result run = Processes.run(List.of(rewritten.toString(), "a"),
                Map.of("LD_LIBRARY_PATH", Fixtures.workerStubDir().toString()));
        assertEquals("constructor ran\nstub main ran argc=2 [a]\n", run.stdout(), run::toString);
        List<String> loads = Readelf.programHeaders(rewritten).lines().filter(l -> l.trim().startsWith("LOAD"))
                .toList();
        long previous = -1;
        for (String load : loads) {
            long address = Long.decode(load.trim().split("\\s+")[2]);
            assertTrue(address > previous, "PT_LOADs sorted by address:\n" + String.join("\n", loads));
            previous = address;
        }
    }

    @Test
    void customNeededLibraryAndEntrySymbol() throws IOException, ElfRewriteException {
        Path rewritten = temp.resolve("custom");
        ElfRewriter.rewrite(Fixtures.helloPie(), rewritten, "libother.so.1", "other_start_main");
        assertEquals("libother.so.1", Readelf.neededLibraries(rewritten).get(0));
        assertTrue(Readelf.dynamicSymbols(rewritten).contains(" other_start_main\n"));
    }
}
