package io.vmcuda.scheduler;

import com.sun.jna.Function;
import com.sun.jna.Memory;
import com.sun.jna.NativeLibrary;
import com.sun.jna.Pointer;
import com.sun.jna.ptr.IntByReference;
import com.sun.jna.ptr.LongByReference;
import com.sun.jna.ptr.PointerByReference;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * Reads the device list from the NVIDIA driver's {@code libcuda.so.1} through the CUDA driver API, called in this
 * process through JNA (as {@link NvmlTelemetry} calls NVML). Only cuInit and cuDeviceGet* are used: a context would
 * take GPU memory in the daemon's process for its whole life and count as a compute process. The devices come in
 * the CUDA driver's order (not NVML's, which may differ), the order CUDA_VISIBLE_DEVICES indexes count in.
 *
 * <p>The entry points are those cuda.h (CUDA 13) maps the API names to: {@code cuDeviceTotalMem_v2} (a size_t
 * total) and {@code cuDeviceGetUuid_v2} (since CUDA 11.4). The library stays loaded (the driver keeps cuInit's
 * state); it is loaded from the path {@link LibcudaLocator} found.
 */
public final class CudaDriverQuery {
    // cuda.h
    private static final int CUDA_SUCCESS = 0;
    private static final int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75;
    private static final int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76;
    private static final int NAME_BYTES = 256;
    private static final int UUID_BYTES = 16; // CUuuid

    private final NativeLibrary library;

    private CudaDriverQuery(NativeLibrary library) {
        this.library = library;
    }

    /**
     * The GPUs the driver at {@code libcuda} reports, by CUDA device ordinal; GpuQueryException with one line saying
     * why not: the library does not load or lacks an entry point, or a call fails ("cuInit failed:
     * CUDA_ERROR_NO_DEVICE", the CUresult's name from cuGetErrorName).
     */
    public static List<GpuInfo> query(Path libcuda) throws GpuQueryException {
        NativeLibrary lib;
        try {
            lib = NativeLibrary.getInstance(libcuda.toString());
        } catch (UnsatisfiedLinkError | RuntimeException e) {
            throw new GpuQueryException("cannot load " + libcuda + ": " + firstLine(e.getMessage()));
        }
        return new CudaDriverQuery(lib).devices();
    }

    private List<GpuInfo> devices() throws GpuQueryException {
        call("cuInit", 0);
        IntByReference count = new IntByReference();
        call("cuDeviceGetCount", count);
        List<GpuInfo> gpus = new ArrayList<>();
        for (int i = 0; i < count.getValue(); i++) {
            IntByReference device = new IntByReference();
            call("cuDeviceGet", device, i);
            int dev = device.getValue(); // CUdevice is an int
            Memory name = new Memory(NAME_BYTES);
            name.clear();
            call("cuDeviceGetName", name, NAME_BYTES, dev);
            Memory uuid = new Memory(UUID_BYTES);
            call("cuDeviceGetUuid_v2", uuid, dev);
            LongByReference total = new LongByReference(); // size_t: 8 bytes on x86_64, the only platform shipped
            call("cuDeviceTotalMem_v2", total, dev);
            IntByReference major = new IntByReference();
            IntByReference minor = new IntByReference();
            call("cuDeviceGetAttribute", major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev);
            call("cuDeviceGetAttribute", minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev);
            gpus.add(new GpuInfo(i, cString(name.getByteArray(0, NAME_BYTES)), formatUuid(uuid.getByteArray(0, UUID_BYTES)),
                    total.getValue(), major.getValue() + "." + minor.getValue()));
        }
        return gpus;
    }

    /** Calls {@code function} (a CUresult-returning entry point); GpuQueryException naming it and the error. */
    private void call(String function, Object... args) throws GpuQueryException {
        int result = function(function).invokeInt(args);
        if (result != CUDA_SUCCESS) throw new GpuQueryException(function + " failed: " + errorName(result));
    }

    private Function function(String name) throws GpuQueryException {
        try {
            return library.getFunction(name);
        } catch (UnsatisfiedLinkError e) { // not a CUDA driver, or one older than CUDA 11.4 (no _v2 UUID)
            throw new GpuQueryException(library.getName() + " is not a usable CUDA driver: " + firstLine(e.getMessage()));
        }
    }

    /** The CUresult's name as the driver spells it (CUDA_ERROR_NO_DEVICE), or "CUresult N" for one it does not know. */
    private String errorName(int result) {
        try {
            PointerByReference name = new PointerByReference();
            int rc = library.getFunction("cuGetErrorName").invokeInt(new Object[] {result, name});
            Pointer p = name.getValue();
            if (rc == CUDA_SUCCESS && p != null) return p.getString(0, StandardCharsets.US_ASCII.name());
        } catch (UnsatisfiedLinkError e) {
            // no cuGetErrorName: the number then
        }
        return "CUresult " + result;
    }

    /** Formats the 16 UUID bytes as nvidia-smi does: {@code GPU-8-4-4-4-12} lowercase hex. */
    static String formatUuid(byte[] b) {
        if (b == null || b.length != UUID_BYTES) throw new IllegalArgumentException("a GPU UUID has 16 bytes");
        StringBuilder s = new StringBuilder("GPU-");
        for (int i = 0; i < UUID_BYTES; i++) {
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

    private static String firstLine(String s) {
        if (s == null) return "";
        int nl = s.indexOf('\n');
        return nl < 0 ? s : s.substring(0, nl);
    }
}
