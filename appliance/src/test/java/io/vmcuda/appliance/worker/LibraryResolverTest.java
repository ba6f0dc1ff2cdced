package io.vmcuda.appliance.worker;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.vmcuda.rewriter.ElfDependencies;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Which NEEDED names a worker's loader would not find on this machine. */
class LibraryResolverTest {
    @TempDir
    Path dir;

    @Test
    void onlyWhatNoDirectoryCacheOrShippedLibraryHasIsMissing() throws Exception {
        Path workerLibs = Files.createDirectories(dir.resolve("worker"));
        Files.writeString(workerLibs.resolve("libvmcuda-worker.so"), "");
        Path absoluteRunpath = Files.createDirectories(dir.resolve("opt"));
        Files.writeString(absoluteRunpath.resolve("libopt.so"), "");
        LibraryResolver r = new LibraryResolver(List.of(workerLibs));
        ElfDependencies deps = new ElfDependencies(List.of("libvmcuda-worker.so", "libc.so.6", "libopt.so", "libmine.so.1",
                "libshipped.so", "/abs/libpath.so", "libmine.so.1"), List.of("$ORIGIN/lib", absoluteRunpath.toString()), "");
        // libc.so.6: the loader's cache and default directories; libopt.so: an absolute run path; libshipped.so:
        // already shipped; a path is the loader's business; libmine.so.1 is named once
        assertEquals(List.of("libmine.so.1"), r.missing(deps, Set.of("libshipped.so")));
    }

    @Test
    void originDirectoriesAreTheClientsNotTheAppliances() throws Exception {
        LibraryResolver r = new LibraryResolver(List.of());
        ElfDependencies deps = new ElfDependencies(List.of("libonlyclient.so"), List.of("$ORIGIN", dir.toString() + "/$LIB"), "");
        assertEquals(List.of("libonlyclient.so"), r.missing(deps, Set.of()));
    }
}
