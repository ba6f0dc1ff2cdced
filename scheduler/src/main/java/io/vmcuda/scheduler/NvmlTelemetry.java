package io.vmcuda.scheduler;

import com.sun.jna.Function;
import com.sun.jna.Memory;
import com.sun.jna.NativeLibrary;
import com.sun.jna.Pointer;
import com.sun.jna.ptr.IntByReference;
import com.sun.jna.ptr.LongByReference;
import com.sun.jna.ptr.PointerByReference;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The live figures of the host's GPUs from NVML (the driver's libnvidia-ml.so.1), called in this process through
 * JNA: what nvidia-smi prints, without a process and its parsing every few seconds. The GPUs are enumerated once at
 * load (the inventory is fixed for the daemon's life); a figure a GPU does not report (NVML_ERROR_NOT_SUPPORTED:
 * ECC off, a vGPU, MIG) is -1, as nvidia-smi's "[N/A]" was.
 */
final class NvmlTelemetry implements GpuTelemetry {
    // nvml.h: return codes and the enum values used here
    private static final int SUCCESS = 0;
    private static final int INSUFFICIENT_SIZE = 7;
    private static final int TEMPERATURE_GPU = 0;
    private static final int CLOCK_SM = 1;
    private static final int MEMORY_ERROR_TYPE_UNCORRECTED = 1;
    private static final int VOLATILE_ECC = 0;
    private static final int UUID_BUFFER_BYTES = 96; // NVML_DEVICE_UUID_V2_BUFFER_SIZE
    private static final int PROCESS_INFO_BYTES = 24; // nvmlProcessInfo_t: u32 pid, u64 usedGpuMemory, u32 gi, u32 ci
    private static final long VALUE_NOT_AVAILABLE = -1L; // NVML_VALUE_NOT_AVAILABLE, (unsigned long long)-1

    private final NativeLibrary library;
    private final List<Pointer> devices;
    private final List<String> uuids;

    private NvmlTelemetry(NativeLibrary library, List<Pointer> devices, List<String> uuids) {
        this.library = library;
        this.devices = devices;
        this.uuids = uuids;
    }

    /** Loads NVML, initialises it and lists the GPUs; GpuQueryException saying why it cannot. */
    static NvmlTelemetry load(String library) throws GpuQueryException {
        NativeLibrary lib;
        try {
            lib = NativeLibrary.getInstance(library);
        } catch (UnsatisfiedLinkError | RuntimeException e) {
            throw new GpuQueryException("cannot load " + library + " (no NVIDIA driver?): " + firstLine(e.getMessage()));
        }
        try {
            check(lib, "nvmlInit_v2", call(lib, "nvmlInit_v2"));
            IntByReference count = new IntByReference();
            check(lib, "nvmlDeviceGetCount_v2", call(lib, "nvmlDeviceGetCount_v2", count));
            List<Pointer> devices = new ArrayList<>();
            List<String> uuids = new ArrayList<>();
            for (int i = 0; i < count.getValue(); i++) {
                PointerByReference handle = new PointerByReference();
                check(lib, "nvmlDeviceGetHandleByIndex_v2", call(lib, "nvmlDeviceGetHandleByIndex_v2", i, handle));
                Memory uuid = new Memory(UUID_BUFFER_BYTES);
                check(lib, "nvmlDeviceGetUUID", call(lib, "nvmlDeviceGetUUID", handle.getValue(), uuid, UUID_BUFFER_BYTES));
                devices.add(handle.getValue());
                uuids.add(uuid.getString(0));
            }
            return new NvmlTelemetry(lib, List.copyOf(devices), List.copyOf(uuids));
        } catch (UnsatisfiedLinkError e) { // an NVML without one of the functions above
            throw new GpuQueryException(library + " is not a usable NVML: " + firstLine(e.getMessage()));
        }
    }

    @Override
    public String source() {
        return "NVML (" + library.getName() + ")";
    }

    @Override
    public Map<String, GpuUsage> usage() throws GpuQueryException {
        Map<String, GpuUsage> usage = new HashMap<>();
        for (int i = 0; i < devices.size(); i++) {
            Memory memory = new Memory(24); // nvmlMemory_t: total, free, used
            check(library, "nvmlDeviceGetMemoryInfo", call("nvmlDeviceGetMemoryInfo", devices.get(i), memory));
            Memory rates = new Memory(8); // nvmlUtilization_t: gpu, memory (percent)
            int util = call("nvmlDeviceGetUtilizationRates", devices.get(i), rates) == SUCCESS ? rates.getInt(0) : -1;
            usage.put(uuids.get(i), new GpuUsage(memory.getLong(16), util));
        }
        return usage;
    }

    @Override
    public Map<String, GpuHealth> health() {
        Map<String, GpuHealth> health = new HashMap<>();
        for (int i = 0; i < devices.size(); i++) {
            Pointer d = devices.get(i);
            IntByReference temperature = new IntByReference(), milliwatts = new IntByReference(), mhz = new IntByReference();
            LongByReference ecc = new LongByReference();
            int t = call("nvmlDeviceGetTemperature", d, TEMPERATURE_GPU, temperature) == SUCCESS ? temperature.getValue() : -1;
            double w = call("nvmlDeviceGetPowerUsage", d, milliwatts) == SUCCESS ? Integer.toUnsignedLong(milliwatts.getValue()) / 1000.0 : -1;
            int clock = call("nvmlDeviceGetClockInfo", d, CLOCK_SM, mhz) == SUCCESS ? mhz.getValue() : -1;
            long errors = call("nvmlDeviceGetTotalEccErrors", d, MEMORY_ERROR_TYPE_UNCORRECTED, VOLATILE_ECC, ecc) == SUCCESS
                    ? ecc.getValue() : -1;
            health.put(uuids.get(i), new GpuHealth(t, w, clock, errors));
        }
        return health;
    }

    @Override
    public Map<Long, Long> processMemory() throws GpuQueryException {
        Map<Long, Long> used = new HashMap<>();
        for (Pointer d : devices) {
            IntByReference count = new IntByReference(0);
            int rc = call("nvmlDeviceGetComputeRunningProcesses_v3", d, count, Pointer.NULL);
            if (rc == SUCCESS) continue; // no process on this GPU
            if (rc != INSUFFICIENT_SIZE) check(library, "nvmlDeviceGetComputeRunningProcesses_v3", rc);
            // room for processes that start meanwhile
            int room = count.getValue() + 8;
            Memory infos = new Memory((long) room * PROCESS_INFO_BYTES);
            count.setValue(room);
            check(library, "nvmlDeviceGetComputeRunningProcesses_v3", call("nvmlDeviceGetComputeRunningProcesses_v3", d, count, infos));
            for (int i = 0; i < Math.min(count.getValue(), room); i++) {
                long pid = Integer.toUnsignedLong(infos.getInt((long) i * PROCESS_INFO_BYTES));
                long bytes = infos.getLong((long) i * PROCESS_INFO_BYTES + 8);
                // not reported where the driver does not tell (some vGPU and MIG set-ups): nothing to enforce with
                if (bytes != VALUE_NOT_AVAILABLE) used.merge(pid, bytes, Long::sum);
            }
        }
        return used;
    }

    private int call(String function, Object... args) {
        return call(library, function, args);
    }

    private static int call(NativeLibrary lib, String function, Object... args) {
        Function f = lib.getFunction(function);
        return f.invokeInt(args);
    }

    private static void check(NativeLibrary lib, String function, int rc) throws GpuQueryException {
        if (rc == SUCCESS) return;
        String text;
        try {
            Pointer p = (Pointer) lib.getFunction("nvmlErrorString").invoke(Pointer.class, new Object[] {rc});
            text = p == null ? "error " + rc : p.getString(0);
        } catch (UnsatisfiedLinkError e) {
            text = "error " + rc;
        }
        throw new GpuQueryException(function + ": " + text);
    }

    private static String firstLine(String s) {
        if (s == null) return "";
        int nl = s.indexOf('\n');
        return nl < 0 ? s : s.substring(0, nl);
    }
}
