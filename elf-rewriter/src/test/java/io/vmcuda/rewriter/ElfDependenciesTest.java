package io.vmcuda.rewriter;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** What the loader would need: NEEDED names, the search path, the SONAME, of programs and libraries gcc builds. */
class ElfDependenciesTest {
    @TempDir
    Path dir;

    @Test
    void aProgramNeedsLibc() throws Exception {
        ElfDependencies d = ElfDependencies.read(Fixtures.helloPie());
        assertTrue(d.needed().contains("libc.so.6"), d.toString());
        assertEquals("", d.soname());
    }

    @Test
    void aLibraryWithSonameAndRunpath() throws Exception {
        Path lib = dir.resolve("libx.so");
        Process p = new ProcessBuilder("gcc", "-shared", "-fPIC", "-Wl,-soname,libx.so.2", "-Wl,-rpath,$ORIGIN/lib:/opt/x",
                "-Wl,--enable-new-dtags", "-o", lib.toString(), "-x", "c", "-").redirectErrorStream(true).start();
        p.getOutputStream().write("int x(void) { return 1; }\n".getBytes());
        p.getOutputStream().close();
        assertEquals(0, p.waitFor(), new String(p.getInputStream().readAllBytes()));
        ElfDependencies d = ElfDependencies.read(lib);
        assertEquals("libx.so.2", d.soname());
        assertEquals(List.of("$ORIGIN/lib", "/opt/x"), d.searchPath());
    }

    @Test
    void aStaticProgramNeedsNothing() throws Exception {
        ElfDependencies d = ElfDependencies.read(Fixtures.helloStatic());
        assertTrue(d.needed().isEmpty() && d.searchPath().isEmpty(), d.toString());
    }

    @Test
    void badInputIsRefusedWithAReason() throws Exception {
        Path text = Files.writeString(dir.resolve("notelf"), "#!/bin/sh\n");
        assertThrows(ElfRewriteException.class, () -> ElfDependencies.read(text));
        assertThrows(ElfRewriteException.class, () -> ElfDependencies.read(dir));
        byte[] elf = Files.readAllBytes(Fixtures.helloPie());
        Path cut = Files.write(dir.resolve("cut"), java.util.Arrays.copyOf(elf, 200));
        assertThrows(ElfRewriteException.class, () -> ElfDependencies.read(cut));
    }
}
