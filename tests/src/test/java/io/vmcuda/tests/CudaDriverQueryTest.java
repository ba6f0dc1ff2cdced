package io.vmcuda.tests;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.sun.jna.NativeLibrary;
import io.vmcuda.scheduler.CudaDriverQuery;
import io.vmcuda.scheduler.GpuInfo;
import io.vmcuda.scheduler.GpuQueryException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * The daemon's GPU inventory from the CUDA driver API (scheduler's CudaDriverQuery: cuInit and cuDeviceGet* through
 * JNA) against CI's stand-in driver (tests/driver/fake/libfakecuda.so, which exports those entry points as NVIDIA's
 * libcuda.so.1 does): the GPU it reports, a failing call named with its CUresult, a library that is no driver, and
 * the real daemon finding the stand-in where the dynamic linker would (LD_LIBRARY_PATH) and logging its GPU.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class CudaDriverQueryTest {
    private static final int CUDA_ERROR_NO_DEVICE = 100;
    private static final int CUDA_ERROR_NOT_SUPPORTED = 801;
    /** What the stand-in's one device is (fake_libcuda.c: f_cuDeviceGetName, _GetUuid, _TotalMem, the attributes). */
    private static final GpuInfo STAND_IN_GPU = new GpuInfo(0, "vmcuda test double (no GPU)",
            "GPU-a0a1a2a3-a4a5-a6a7-a8a9-aaabacadaeaf", 8L << 30, "9.0");

    private StandInDriver driver;
    private Path fake;

    @BeforeAll
    void locate() throws Exception {
        driver = StandInDriver.locate("inventory", "drv_api");
        fake = driver.driverDir().resolve("libfakecuda.so");
    }

    @Test
    void theStandInsGpuComesFromTheDriverApi() throws Exception {
        assertEquals(List.of(STAND_IN_GPU), CudaDriverQuery.query(fake));
    }

    @Test
    void aFailingCallIsNamedWithTheDriversNameForItsError() throws Exception {
        try {
            standInFails("cuInit", CUDA_ERROR_NO_DEVICE); // what NVIDIA's driver says on a host whose GPUs are all gone
            assertEquals("cuInit failed: CUDA_ERROR_NO_DEVICE", queryError());
            standInFails("cuDeviceGetUuid_v2", CUDA_ERROR_NOT_SUPPORTED);
            assertEquals("cuDeviceGetUuid_v2 failed: CUDA_ERROR_NOT_SUPPORTED", queryError());
            standInFails("cuDeviceTotalMem_v2", 12345); // a result the driver has no name for
            assertEquals("cuDeviceTotalMem_v2 failed: CUresult 12345", queryError());
        } finally {
            standInFails("", 0);
        }
        assertEquals(List.of(STAND_IN_GPU), CudaDriverQuery.query(fake));
    }

    @Test
    void aLibraryThatIsNoDriverIsRefusedWithTheReason() {
        GpuQueryException missing = assertThrows(GpuQueryException.class,
                () -> CudaDriverQuery.query(Path.of("/nonexistent/libcuda.so.1")));
        assertTrue(missing.getMessage().startsWith("cannot load /nonexistent/libcuda.so.1: "), missing.getMessage());
        GpuQueryException wrong = assertThrows(GpuQueryException.class, () -> CudaDriverQuery.query(Path.of("libc.so.6")));
        assertTrue(wrong.getMessage().contains("is not a usable CUDA driver") && wrong.getMessage().contains("cuInit"),
                wrong.getMessage());
    }

    /** vmcudad as operators start it: LibcudaLocator finds libcuda.so.1 on LD_LIBRARY_PATH and the driver API answers. */
    @Test
    void theDaemonTakesItsInventoryFromTheDriverItFinds() throws Exception {
        Path libDir = Files.createDirectories(driver.work().resolve("driver-lib"));
        Path libcuda = libDir.resolve("libcuda.so.1");
        Files.deleteIfExists(libcuda);
        Files.createSymbolicLink(libcuda, fake);
        try (DaemonProcess d = DaemonProcess.start(driver.root(), driver.work(), Map.of(), null, "daemon-inventory.log",
                null, Map.of("LD_LIBRARY_PATH", libDir.toString()))) {
            String log = d.logText();
            assertTrue(log.contains("1 GPU(s) from driver API via " + libcuda + "; 0: vmcuda test double (no GPU) "
                    + STAND_IN_GPU.uuid() + " 8192 MiB cc 9.0"), log);
            String status = d.get("/status").body();
            assertTrue(status.contains(STAND_IN_GPU.uuid()), status);
        }
    }

    private String queryError() {
        return assertThrows(GpuQueryException.class, () -> CudaDriverQuery.query(fake)).getMessage();
    }

    /** The stand-in's test hook: its exported {@code symbol} returns {@code result} from now on ("" for none). */
    private void standInFails(String symbol, int result) {
        NativeLibrary.getInstance(fake.toString()).getFunction("vmcuda_fake_fail").invokeVoid(new Object[] {symbol, result});
    }
}
