package io.vmcuda.scheduler;

import static jcuda.driver.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR;
import static jcuda.driver.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import jcuda.driver.CUdevice;
import jcuda.driver.CUresult;
import jcuda.driver.CUuuid;
import jcuda.driver.JCudaDriver;

/**
 * Reads the device list through the CUDA driver API. Only cuInit and cuDeviceGet* are used: a context
 * would take GPU memory in the daemon's process for its whole life and count as a compute process.
 * Call only after {@link LibcudaLocator} found the driver library.
 */
final class JcudaDeviceQuery {
    private JcudaDeviceQuery() {}

    static List<GpuInfo> query() throws GpuQueryException {
        JCudaDriver.setExceptionsEnabled(false);
        check("cuInit", JCudaDriver.cuInit(0));
        int[] count = new int[1];
        check("cuDeviceGetCount", JCudaDriver.cuDeviceGetCount(count));
        List<GpuInfo> gpus = new ArrayList<>();
        for (int i = 0; i < count[0]; i++) {
            CUdevice dev = new CUdevice();
            check("cuDeviceGet", JCudaDriver.cuDeviceGet(dev, i));
            byte[] name = new byte[256];
            check("cuDeviceGetName", JCudaDriver.cuDeviceGetName(name, name.length, dev));
            CUuuid uuid = new CUuuid();
            check("cuDeviceGetUuid", JCudaDriver.cuDeviceGetUuid(uuid, dev));
            long[] total = new long[1];
            check("cuDeviceTotalMem", JCudaDriver.cuDeviceTotalMem(total, dev));
            int[] major = new int[1];
            int[] minor = new int[1];
            check("cuDeviceGetAttribute", JCudaDriver.cuDeviceGetAttribute(
                    major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev));
            check("cuDeviceGetAttribute", JCudaDriver.cuDeviceGetAttribute(
                    minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev));
            gpus.add(new GpuInfo(i, cString(name), formatUuid(uuid.bytes), total[0], major[0] + "." + minor[0]));
        }
        return gpus;
    }

    /** Formats the 16 UUID bytes as nvidia-smi does: {@code GPU-8-4-4-4-12} lowercase hex. */
    static String formatUuid(byte[] b) {
        if (b == null || b.length != 16) throw new IllegalArgumentException("a GPU UUID has 16 bytes");
        StringBuilder s = new StringBuilder("GPU-");
        for (int i = 0; i < 16; i++) {
            if (i == 4 || i == 6 || i == 8 || i == 10) s.append('-');
            s.append(String.format("%02x", b[i] & 0xff));
        }
        return s.toString();
    }

    private static String cString(byte[] b) {
        int n = 0;
        while (n < b.length && b[n] != 0) n++;
        return new String(b, 0, n, StandardCharsets.UTF_8);
    }

    private static void check(String call, int result) throws GpuQueryException {
        if (result != CUresult.CUDA_SUCCESS) {
            throw new GpuQueryException(call + " failed: " + CUresult.stringFor(result));
        }
    }
}
