package io.vmcuda.appliance;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * Builds the C test fixtures (src/test/c) once per JVM with gcc: the fake worker executable that plays the
 * uploaded client binary, and the stub libvmcuda-worker.so that lets its main() run after rewriting.
 */
final class NativeFixtures {
    private static NativeFixtures built;

    final Path dir;
    final Path fakeWorker;
    /** The fake worker linked against {@link #clientOnlyLibrary}, which lies in a directory no worker searches. */
    final Path needsClientLibrary;
    final Path clientOnlyLibrary;

    private NativeFixtures(Path dir) {
        this.dir = dir;
        this.fakeWorker = dir.resolve("fake_worker");
        this.needsClientLibrary = dir.resolve("needs_client_lib");
        this.clientOnlyLibrary = dir.resolve("client-only").resolve("libvmcfix_client_only.so");
    }

    /** The directory to pass as --worker-lib-dir: it holds the stub libvmcuda-worker.so. */
    Path workerLibDir() {
        return dir;
    }

    static synchronized NativeFixtures get() throws IOException, InterruptedException {
        if (built != null) return built;
        Path src = Path.of(System.getProperty("vmcuda.test.c.dir", "src/test/c"));
        Path dir = Files.createTempDirectory("vmcuda-fixtures");
        gcc(List.of("gcc", "-std=gnu11", "-Wall", "-O1", "-fPIE", "-pie", "-o", dir.resolve("fake_worker").toString(),
                src.resolve("fake_worker.c").toString()));
        gcc(List.of("gcc", "-std=gnu11", "-Wall", "-O1", "-shared", "-fPIC", "-o",
                dir.resolve("libvmcuda-worker.so").toString(), src.resolve("stub_worker_lib.c").toString()));
        Path clientOnly = Files.createDirectories(dir.resolve("client-only"));
        gcc(List.of("gcc", "-std=gnu11", "-Wall", "-O1", "-shared", "-fPIC", "-Wl,-soname,libvmcfix_client_only.so", "-o",
                clientOnly.resolve("libvmcfix_client_only.so").toString(), src.resolve("client_only_lib.c").toString()));
        gcc(List.of("gcc", "-std=gnu11", "-Wall", "-O1", "-fPIE", "-pie", "-o", dir.resolve("needs_client_lib").toString(),
                src.resolve("fake_worker.c").toString(), "-Wl,--no-as-needed", "-L" + clientOnly, "-lvmcfix_client_only"));
        built = new NativeFixtures(dir);
        return built;
    }

    private static void gcc(List<String> cmd) throws IOException, InterruptedException {
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!p.waitFor(120, TimeUnit.SECONDS) || p.exitValue() != 0) {
            throw new IOException("building a test fixture failed: " + String.join(" ", cmd) + "\n" + out);
        }
    }
}
