package io.vmcuda.rewriter;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import java.util.jar.JarEntry;
import java.util.jar.JarOutputStream;
import java.util.stream.Stream;
import net.fornwall.jelf.ElfFile;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * bin/vmcuda-rewrite from a bundle layout ($ROOT/bin, $ROOT/lib/*.jar, optional $ROOT/jre), started through
 * a symlink. (The checkout layout, elf-rewriter/target/*.jar, only exists after the package phase.)
 */
class LauncherTest {
    @TempDir
    Path temp;
    Path root;
    Path symlink;

    @BeforeEach
    void buildBundle() throws IOException {
        root = temp.resolve("bundle");
        Files.createDirectories(root.resolve("bin"));
        Files.createDirectories(root.resolve("lib"));
        Path launcher = Files.copy(Path.of(System.getProperty("vmcuda.launcher")), root.resolve("bin/vmcuda-rewrite"));
        Files.setPosixFilePermissions(launcher, PosixFilePermissions.fromString("rwxr-xr-x"));
        jar(Path.of(System.getProperty("vmcuda.classes.dir")), root.resolve("lib/vmcuda-elf-rewriter.jar"));
        Path jelf;
        try {
            jelf = Path.of(ElfFile.class.getProtectionDomain().getCodeSource().getLocation().toURI());
        } catch (java.net.URISyntaxException e) {
            throw new IllegalStateException(e);
        }
        Files.copy(jelf, root.resolve("lib").resolve(jelf.getFileName()));
        symlink = Files.createSymbolicLink(temp.resolve("vmcuda-rewrite"), launcher);
    }

    @Test
    void runsFromTheBundleThroughASymlink() {
        Processes.Result ok = Processes.run(List.of(symlink.toString(), "--check", Fixtures.helloPie().toString()));
        assertEquals(0, ok.exitCode(), ok::toString);
        assertTrue(ok.stdout().contains("can be rewritten"), ok::toString);

        Processes.Result refused = Processes.run(List.of(symlink.toString(), Fixtures.helloStatic().toString(),
                temp.resolve("out").toString()));
        assertEquals(2, refused.exitCode(), refused::toString);
        assertEquals(1, refused.stderr().lines().count(), refused::toString);
        assertTrue(refused.stderr().startsWith("vmcuda-rewrite: ") && refused.stderr().contains("statically linked"),
                refused::toString);
    }

    @Test
    void prefersTheBundledJre() throws IOException {
        Path marker = temp.resolve("bundled-java-used");
        Path java = root.resolve("jre/bin/java");
        Files.createDirectories(java.getParent());
        Files.writeString(java, "#!/bin/sh\ntouch '" + marker + "'\nexec '"
                + Path.of(System.getProperty("java.home"), "bin", "java") + "' \"$@\"\n");
        Files.setPosixFilePermissions(java, PosixFilePermissions.fromString("rwxr-xr-x"));

        Path output = temp.resolve("rewritten");
        Processes.Result run = Processes.run(List.of(symlink.toString(), Fixtures.helloPie().toString(),
                output.toString()));

        assertEquals(0, run.exitCode(), run::toString);
        assertTrue(Files.exists(marker), "$ROOT/jre/bin/java was used");
        assertTrue(Files.isExecutable(output));
    }

    private static void jar(Path classes, Path jar) throws IOException {
        try (JarOutputStream out = new JarOutputStream(Files.newOutputStream(jar));
             Stream<Path> files = Files.walk(classes)) {
            for (Path file : files.filter(Files::isRegularFile).toList()) {
                out.putNextEntry(new JarEntry(classes.relativize(file).toString()));
                Files.copy(file, (OutputStream) out);
                out.closeEntry();
            }
        }
    }
}
