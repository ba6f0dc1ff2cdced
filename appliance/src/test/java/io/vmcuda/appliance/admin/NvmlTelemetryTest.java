package io.vmcuda.appliance.admin;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.vmcuda.scheduler.GpuHealth;
import io.vmcuda.scheduler.GpuQueryException;
import io.vmcuda.scheduler.GpuTelemetry;
import io.vmcuda.scheduler.GpuUsage;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The daemon's live GPU figures from NVML in-process (scheduler's NvmlTelemetry, through JNA), against the stand-in
 * libnvidia-ml.so.1 (src/test/c/fake_nvml_events.c): two GPUs, the second one reporting little, as a vGPU does. What
 * NVML cannot tell is -1 (the metrics leave it out), never a stale or made-up value; a library that is no NVML is
 * refused with the reason, and the daemon then falls back to nvidia-smi.
 */
class NvmlTelemetryTest {
    private static final Path FAKE_NVML = Path.of("target/native/test/fake-nvml/libnvidia-ml.so.1").toAbsolutePath();

    @Test
    void usageHealthAndProcessMemoryComeFromNvmlWithUnknownsAsMinusOne() throws Exception {
        assertTrue(Files.isRegularFile(FAKE_NVML), "the stand-in NVML was not built");
        GpuTelemetry nvml = GpuTelemetry.nvml(FAKE_NVML);
        assertTrue(nvml.source().startsWith("NVML ("), nvml.source());
        assertEquals(Map.of("GPU-fake-0", new GpuUsage(1L << 30, 37), "GPU-fake-1", new GpuUsage(2L << 30, -1)), nvml.usage());
        assertEquals(Map.of("GPU-fake-0", new GpuHealth(41, 125.5, 1980, 0), "GPU-fake-1", new GpuHealth(42, -1, -1, -1)),
                nvml.health());
        // the stand-in lists this process with 512 MiB and pid 1 without a figure: only the first counts
        assertEquals(Map.of(ProcessHandle.current().pid(), 512L << 20), nvml.processMemory());
    }

    @Test
    void aLibraryThatIsNotNvmlIsRefusedWithTheReason() {
        GpuQueryException missing = assertThrows(GpuQueryException.class,
                () -> GpuTelemetry.nvml(Path.of("/nonexistent/libnvidia-ml.so.1")));
        assertTrue(missing.getMessage().startsWith("cannot load /nonexistent/libnvidia-ml.so.1"), missing.getMessage());
        GpuQueryException wrong = assertThrows(GpuQueryException.class, () -> GpuTelemetry.nvml(Path.of("libc.so.6")));
        assertTrue(wrong.getMessage().contains("nvmlInit_v2"), wrong.getMessage());
    }
}
