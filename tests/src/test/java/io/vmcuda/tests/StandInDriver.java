package io.vmcuda.tests;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;

/**
 * Where an end-to-end test of driver-API programs finds what it runs: the repository, its work directory, CI's
 * stand-in NVIDIA driver (tests/driver/fake) with the programs built beside it, and the CUDA libraries.
 */
record StandInDriver(Path root, Path work, Path driverDir, Path cudaLib) {
    /** Skips the test where nvcc could not build {@code program} and the stand-in driver (the build said why). */
    static StandInDriver locate(String workSubdir, String program) throws IOException {
        Path root = Path.of(System.getProperty("vmcuda.repo.root", "..")).toAbsolutePath().normalize();
        Path driverDir = Path.of(System.getProperty("vmcuda.test.driver", "target/driver")).toAbsolutePath();
        Path work = Path.of(System.getProperty("vmcuda.test.work", "target/e2e")).toAbsolutePath().resolve(workSubdir);
        Path cudaLib = Path.of(System.getProperty("vmcuda.cuda.home", "/usr/local/cuda"), "lib64");
        assumeTrue(Files.isExecutable(driverDir.resolve(program)) && Files.isRegularFile(driverDir.resolve("libfakecuda.so")),
                "no driver test programs in " + driverDir + " (nvcc missing? the build printed the reason)");
        Files.createDirectories(work);
        return new StandInDriver(root, work, driverDir, cudaLib);
    }

    /** The daemon settings that give its workers the stand-in driver. */
    Map<String, String> workerConfig() {
        return Map.of("worker.extra_env", "VMCUDA_WORKER_LIBCUDA=" + driverDir.resolve("libfakecuda.so"),
                "worker.cuda_lib_dirs", cudaLib + ":" + driverDir);
    }
}
