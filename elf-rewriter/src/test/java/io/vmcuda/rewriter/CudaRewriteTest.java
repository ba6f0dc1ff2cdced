package io.vmcuda.rewriter;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A real nvcc-built program: rewritten, it starts in the worker and its CUDA registrations still happen. */
class CudaRewriteTest {
    @TempDir
    Path temp;

    @BeforeAll
    static void requireNvcc() {
        assumeTrue(Fixtures.nvccAvailable(), "nvcc is not installed");
    }

    @Test
    void registrationConstructorsRunBeforeTheWorkerMain() throws Exception {
        Path rewritten = temp.resolve("cuda_program");
        ElfRewriter.rewrite(Fixtures.cudaProgram(), rewritten);

        Processes.Result run = Processes.run(List.of(rewritten.toString(), "arg"), Map.of("LD_LIBRARY_PATH",
                Fixtures.cudaWorkerStubDir() + ":" + Fixtures.cudaLibraryDir()));

        assertEquals(0, run.exitCode(), run::toString);
        assertEquals("stub main ran argc=2 fatbins=1 functions=2 variables=1\n", run.stdout(), run::toString);
        assertFalse(run.stdout().contains("original main"));
        assertEquals("", Readelf.complaints(List.of(rewritten)));
        List<String> needed = Readelf.neededLibraries(rewritten);
        assertEquals(ElfRewriter.DEFAULT_NEEDED, needed.get(0));
        assertTrue(needed.contains("libcudart.so.13") || needed.stream().anyMatch(n -> n.startsWith("libcudart.so")),
                needed::toString);
    }

    @Test
    void staticallyLinkedCudaRuntimeIsRefusedWithAdvice() throws Exception {
        Path program = Fixtures.cudaProgramStaticCudart();
        Path output = temp.resolve("out");

        ElfRewriteException e = assertThrows(ElfRewriteException.class, () -> ElfRewriter.rewrite(program, output));
        assertTrue(e.getMessage().contains("linked statically") && e.getMessage().contains("-cudart shared"),
                e.getMessage());
        assertEquals(Admission.refused(e.getMessage()), ElfRewriter.check(program));

        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int exit = RewriteCli.run(new String[] {program.toString(), output.toString()},
                new PrintStream(new ByteArrayOutputStream(), true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8));
        assertEquals(2, exit);
        assertEquals("vmcuda-rewrite: " + program + ": " + e.getMessage() + "\n", err.toString(StandardCharsets.UTF_8));
        assertFalse(Files.exists(output));
    }
}
