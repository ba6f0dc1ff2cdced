package io.vmcuda.scheduler;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class InventoryParsingTest {
    @Test
    void uuidIsFormattedLikeNvidiaSmi() {
        byte[] b = new byte[16];
        for (int i = 0; i < 16; i++) b[i] = (byte) (0xa0 + i);
        assertEquals("GPU-a0a1a2a3-a4a5-a6a7-a8a9-aaabacadaeaf", CudaDriverQuery.formatUuid(b));
    }

    @Test
    void nvidiaSmiInventoryLines() throws Exception {
        List<GpuInfo> gpus = NvidiaSmi.parseInventory(
                "0, NVIDIA H200, GPU-11111111-2222-3333-4444-555555555555, 143771, 9.0\n");
        assertEquals(List.of(new GpuInfo(0, "NVIDIA H200", "GPU-11111111-2222-3333-4444-555555555555",
                143771L << 20, "9.0")), gpus);
    }

    @Test
    void nvidiaSmiUsageLinesToleratesNotAvailableUtilization() throws Exception {
        Map<String, GpuUsage> u = NvidiaSmi.parseUsage("0, GPU-a, 1024, 37\n1, GPU-b, 0, [N/A]\n");
        assertEquals(new GpuUsage(1024L << 20, 37), u.get("GPU-a"));
        assertEquals(new GpuUsage(0, -1), u.get("GPU-b"));
    }

    /** What an H200 prints, and a GPU that tells neither power nor ECC (a vGPU, ECC off). */
    @Test
    void nvidiaSmiHealthLines() throws Exception {
        Map<String, GpuHealth> h = NvidiaSmi.parseHealth("GPU-a, 34, 76.52, 1980, 0\nGPU-b, 51, [N/A], 1410, [N/A]\n");
        assertEquals(new GpuHealth(34, 76.52, 1980, 0), h.get("GPU-a"));
        assertEquals(new GpuHealth(51, -1, 1410, -1), h.get("GPU-b"));
        assertThrows(GpuQueryException.class, () -> NvidiaSmi.parseHealth("GPU-a, 34\n"));
    }

    @Test
    void malformedNvidiaSmiOutputIsAnErrorNotACrash() {
        assertThrows(GpuQueryException.class, () -> NvidiaSmi.parseUsage("garbage\n"));
        assertThrows(GpuQueryException.class, () -> NvidiaSmi.parseInventory("0, x, y, notanumber, 9.0\n"));
    }

    @Test
    void ldconfigLineParsing() {
        assertTrue(LibcudaLocator.parseLdconfigLine("\tlibcudart.so.13 (libc6,x86-64) => /usr/lib/x").isEmpty());
        assertTrue(LibcudaLocator.parseLdconfigLine("\tlibcuda.so.1 (libc6) => /usr/lib/i386/libcuda.so.1").isEmpty());
    }

    /** On this machine (no driver) detection must degrade to zero GPUs with a reason, never throw. */
    @Test
    void detectionNeverThrows() {
        SystemGpuInventory inv = SystemGpuInventory.detect();
        if (inv.gpus().isEmpty()) {
            assertTrue(inv.unavailableReason() != null && !inv.unavailableReason().isBlank());
        }
    }

    @Test
    void processMemoryIsSummedPerPidOverItsGpus() throws GpuQueryException {
        Map<Long, Long> m = NvidiaSmi.parseProcessMemory("4242, 1024\n4242, 512\n77, [N/A]\n9, 0\n");
        assertEquals(Map.of(4242L, 1536L << 20, 9L, 0L), m);
        assertEquals(Map.of(), NvidiaSmi.parseProcessMemory(""));
        assertThrows(GpuQueryException.class, () -> NvidiaSmi.parseProcessMemory("4242\n"));
    }
}
