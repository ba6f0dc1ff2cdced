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
        LibraryResolver r = new LibraryResolver(List.of(workerLibs));
        ElfDependencies deps = new ElfDependencies(List.of("libvmcuda-worker.so", "libc.so.6", "libmine.so.1",
                "libshipped.so", "/abs/libpath.so", "libmine.so.1"), List.of(), "");
        // libc.so.6: the loader's cache and default directories; libshipped.so: already shipped; a path is the
        // loader's business; libmine.so.1 is named once
        assertEquals(List.of("libmine.so.1"), r.missing(deps, Set.of("libshipped.so")));
    }

    /**
     * The program's own run path is the client's: it is not searched here, so a tenant cannot learn which files
     * exist on the appliance (another tenant's cache entries, root's files) from what it is asked for.
     */
    @Test
    void theProgramsRunPathRevealsNothingOfTheAppliance() throws Exception {
        Path secret = Files.createDirectories(dir.resolve("cache"));
        Files.writeString(secret.resolve("ab".repeat(32)), "someone else's upload");
        Files.createDirectories(secret.resolve("cd".repeat(32)));
        LibraryResolver r = new LibraryResolver(List.of());
        List<String> probes = List.of("ab".repeat(32), "cd".repeat(32), "no-such-file");
        ElfDependencies deps = new ElfDependencies(probes, List.of(secret.toString(), "$ORIGIN"), "");
        assertEquals(probes, r.missing(deps, Set.of()), "existing or not, every name is asked for alike");
        // names that are not plain file names are left to the loader, never looked up
        ElfDependencies odd = new ElfDependencies(List.of("..", ".", "a\nb", "../../etc/passwd"), List.of(), "");
        assertEquals(List.of(), r.missing(odd, Set.of()));
    }
}
