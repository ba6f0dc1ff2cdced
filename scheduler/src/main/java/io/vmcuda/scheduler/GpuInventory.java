package io.vmcuda.scheduler;

import java.util.List;
import java.util.Optional;

/** The GPUs this appliance can hand out, fixed for the daemon's life, plus their live usage when known. */
public interface GpuInventory {
    /** GPUs by index; empty on a host without a usable GPU or driver. */
    List<GpuInfo> gpus();

    /** Why {@link #gpus()} is empty (one line), or null when there are GPUs. */
    String unavailableReason();

    /** Last sampled usage of the GPU with this UUID; empty when it cannot be measured. Must not block. */
    Optional<GpuUsage> usage(String uuid);

    /** Last sampled health (temperature, power, clock, ECC) of the GPU with this UUID; empty when unknown. Must not block. */
    default Optional<GpuHealth> health(String uuid) {
        return Optional.empty();
    }

    /**
     * Device memory each process uses now, by host pid, summed over its GPUs, asked of the driver (blocks for
     * tens of ms); empty when this inventory cannot tell.
     */
    default Optional<java.util.Map<Long, Long>> processMemory() {
        return Optional.empty();
    }
}
