package io.vmcuda.rewriter;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Test programs compiled from src/test/resources/fixtures with the machine's gcc/g++/nvcc into
 * target/fixtures, once per test JVM.
 */
final class Fixtures {
    static final Path DIR = Path.of(System.getProperty("vmcuda.fixtures.dir", "target/fixtures")).toAbsolutePath();
    static final Path CUDA_HOME = Path.of(System.getProperty("cuda.home", "/usr/local/cuda"));
    private static final Map<String, Path> BUILT = new HashMap<>();

    private Fixtures() {
    }

    static Path helloPie() {
        return build("hello_pie", "hello.c", "gcc", "-O1", "-pie", "-fPIE");
    }

    static Path helloNoPie() {
        return build("hello_nopie", "hello.c", "gcc", "-O1", "-no-pie", "-fno-pie");
    }

    static Path helloNowRelro() {
        return build("hello_now_relro", "hello.c", "gcc", "-O1", "-Wl,-z,now", "-Wl,-z,relro");
    }

    /** Also carries a SysV DT_HASH, which chains undefined symbols too. */
    static Path helloSysvHash() {
        return build("hello_sysv_hash", "hello.c", "gcc", "-O1", "-Wl,--hash-style=both");
    }

    static Path helloCxx() {
        return build("hello_cxx", "hello.cpp", "g++", "-O1");
    }

    static Path helloStatic() {
        return build("hello_static", "hello.c", "gcc", "-O1", "-static");
    }

    static Path sharedLibrary() {
        return build("libhello.so", "hello.c", "gcc", "-O1", "-shared", "-fPIC");
    }

    static Path objectFile() {
        return build("hello.o", "hello.c", "gcc", "-O1", "-c");
    }

    static Path noLibcStartMain() {
        return build("no_libc_start", "no_libc_start.c", "gcc", "-O1", "-nostartfiles");
    }

    /** Directory holding the test's libvmcuda-worker.so (the plain stub). */
    static Path workerStubDir() {
        Path lib = build("stub/libvmcuda-worker.so", "worker_stub.c", "gcc", "-O1", "-shared", "-fPIC");
        return lib.getParent();
    }

    static boolean nvccAvailable() {
        return Processes.onPath("nvcc") || Files.isExecutable(CUDA_HOME.resolve("bin/nvcc"));
    }

    static Path cudaProgram() {
        return build("cuda_program", "cuda_program.cu", nvcc(), "-cudart", "shared",
                "-gencode", "arch=compute_90,code=[sm_90,compute_90]");
    }

    static Path cudaProgramStaticCudart() {
        return build("cuda_program_static", "cuda_program.cu", nvcc(),
                "-gencode", "arch=compute_90,code=[sm_90,compute_90]");
    }

    /** Directory holding the registration-counting libvmcuda-worker.so. */
    static Path cudaWorkerStubDir() {
        return build("cuda-stub/libvmcuda-worker.so", "cuda_worker_stub.c", "gcc", "-O1", "-shared", "-fPIC",
                "-ldl").getParent();
    }

    static Path cudaLibraryDir() {
        return Files.isDirectory(CUDA_HOME.resolve("lib64")) ? CUDA_HOME.resolve("lib64")
                : CUDA_HOME.resolve("targets/x86_64-linux/lib");
    }

    private static String nvcc() {
        return Processes.onPath("nvcc") ? "nvcc" : CUDA_HOME.resolve("bin/nvcc").toString();
    }

    private static synchronized Path build(String name, String source, String compiler, String... flags) {
        return BUILT.computeIfAbsent(name, n -> {
            try {
                Path out = DIR.resolve(n);
                Files.createDirectories(out.getParent());
                Path src = DIR.resolve("src").resolve(source);
                Files.createDirectories(src.getParent());
                try (InputStream in = Fixtures.class.getResourceAsStream("/fixtures/" + source)) {
                    if (in == null) {
                        throw new IllegalStateException("missing fixture source " + source);
                    }
                    Files.copy(in, src, StandardCopyOption.REPLACE_EXISTING);
                }
                List<String> command = new ArrayList<>(List.of(compiler));
                command.addAll(List.of(flags));
                // libraries (-l...) must follow the source
                List<String> libraries = command.stream().filter(f -> f.startsWith("-l")).toList();
                command.removeAll(libraries);
                command.addAll(List.of("-o", out.toString(), src.toString()));
                command.addAll(libraries);
                Processes.require(command);
                return out;
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        });
    }
}
