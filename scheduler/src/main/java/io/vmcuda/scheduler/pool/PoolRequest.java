package io.vmcuda.scheduler.pool;

import java.util.Locale;

/**
 * What a client asks of the pool.
 *
 * @param gpus           distinct GPUs of one appliance
 * @param clientHost     the client host's identity (for the locality policy); empty when unknown
 * @param gpuModel       a part of the GPU's name that must match, case-insensitive ("H100"); empty: any
 * @param minGpuMemory   bytes of memory each GPU must have at least; 0: any
 */
public record PoolRequest(int gpus, String clientHost, String gpuModel, long minGpuMemory) {
    public PoolRequest {
        if (gpus < 1) throw new IllegalArgumentException("gpus must be >= 1");
        clientHost = clientHost == null ? "" : clientHost;
        gpuModel = gpuModel == null ? "" : gpuModel;
    }

    boolean accepts(PoolGpu g) {
        return g.memoryTotal() >= minGpuMemory
                && (gpuModel.isEmpty() || g.name().toLowerCase(Locale.ROOT).contains(gpuModel.toLowerCase(Locale.ROOT)));
    }

    /** The request in words, for a refusal. */
    public String describe() {
        StringBuilder s = new StringBuilder().append(gpus).append(" GPU(s)");
        if (!gpuModel.isEmpty()) s.append(" of model '").append(gpuModel).append('\'');
        if (minGpuMemory > 0) s.append(" with at least ").append(minGpuMemory >> 20).append(" MiB");
        return s.toString();
    }
}
