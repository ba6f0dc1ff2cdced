package io.vmcuda.scheduler;

import java.nio.file.Path;
import java.util.Map;

/**
 * Where the live figures of the host's GPUs come from: NVML in this process ({@link NvmlTelemetry}) where the
 * driver's libnvidia-ml.so.1 loads, else nvidia-smi runs ({@link NvidiaSmi}). Each call asks the driver now and
 * may block for a few milliseconds (NVML) to tens of them (nvidia-smi); keys are GPU UUIDs.
 */
public interface GpuTelemetry {
    /** What answers, for the log: "NVML (libnvidia-ml.so.1)" or "nvidia-smi". */
    String source();

    Map<String, GpuUsage> usage() throws GpuQueryException;

    Map<String, GpuHealth> health() throws GpuQueryException;

    /** Device memory each process uses, by pid (as the daemon sees pids), summed over its GPUs. */
    Map<Long, Long> processMemory() throws GpuQueryException;

    /** NVML from {@code library} (an absolute path, or a name the loader resolves); GpuQueryException saying why not. */
    static GpuTelemetry nvml(Path library) throws GpuQueryException {
        return NvmlTelemetry.load(library.toString());
    }
}
