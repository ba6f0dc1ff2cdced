package io.vmcuda.appliance.admin;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.Test;

/**
 * vmcuda-xid-watch (the real helper, xid_watch.c) against a stand-in libnvidia-ml.so.1 with scripted events
 * (src/test/c/fake_nvml_events.c): XIDs are counted per GPU and XID as they come, a GPU that cannot report them
 * is left out, and a machine without NVML says why instead of pretending to watch.
 */
class XidWatchTest {
    private static final Path NATIVE = Path.of("target/native").toAbsolutePath();
    private static final Path FAKE_NVML = NATIVE.resolve("test/fake-nvml");

    private static void await(String what, BooleanSupplier done) throws InterruptedException {
        long deadline = System.nanoTime() + 10_000_000_000L;
        while (!done.getAsBoolean()) {
            if (System.nanoTime() > deadline) throw new AssertionError("not within 10 s: " + what);
            Thread.sleep(20);
        }
    }

    @Test
    void xidErrorsAreCountedPerGpuAndXidAndAFailedWaitDoesNotEndTheWatching() throws Exception {
        assertTrue(Files.isRegularFile(FAKE_NVML.resolve("libnvidia-ml.so.1")), "the stand-in NVML was not built");
        try (XidWatch w = XidWatch.start(NATIVE, Map.of("LD_LIBRARY_PATH", FAKE_NVML.toString(),
                "FAKE_NVML_XIDS", "79,lost,13,79", "FAKE_NVML_GPU1_UNSUPPORTED", "1"))) {
            assertNotNull(w);
            await("three XIDs counted", () -> w.counts().getOrDefault("GPU-fake-0", Map.of()).values().stream()
                    .mapToLong(Long::longValue).sum() == 3);
            assertEquals(Map.of("GPU-fake-0", Map.of(13L, 1L, 79L, 2L)), w.counts());
            assertEquals(1, w.watched(), "GPU 1 cannot report XIDs and is not counted as watched");
            assertNull(w.problem());
        }
    }

    @Test
    void withoutNvmlNothingIsWatchedAndTheReasonIsKept() throws Exception {
        try (XidWatch w = XidWatch.start(NATIVE, Map.of("LD_LIBRARY_PATH", "/nonexistent"))) {
            assertNotNull(w);
            await("the helper's reason", () -> w.problem() != null && !w.problem().equals("starting"));
            assertTrue(w.problem().contains("cannot load libnvidia-ml.so.1"), w.problem());
            assertEquals(0, w.watched());
            assertTrue(w.counts().isEmpty());
        }
    }

    @Test
    void aMissingHelperIsNoWatcher() {
        assertNull(XidWatch.start(Path.of("/nonexistent"), Map.of()));
    }
}
