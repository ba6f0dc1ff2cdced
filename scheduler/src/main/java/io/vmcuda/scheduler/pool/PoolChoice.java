package io.vmcuda.scheduler.pool;

import java.util.List;

/** Where a placement sends a client: one appliance and GPUs of it. */
public record PoolChoice(PoolAppliance appliance, List<PoolGpu> gpus) {
    public List<String> gpuUuids() {
        return gpus.stream().map(PoolGpu::uuid).toList();
    }
}
