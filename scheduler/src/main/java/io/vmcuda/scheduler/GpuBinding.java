package io.vmcuda.scheduler;

import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.stream.Collectors;

/**
 * The GPUs one session holds for its whole life. Empty on an appliance without GPUs (the worker still
 * runs, so the application gets the CUDA runtime's own error). Release it once through the scheduler.
 */
public final class GpuBinding {
    private final List<GpuInfo> gpus;
    private final String owner;
    private final AtomicBoolean released = new AtomicBoolean();

    GpuBinding(List<GpuInfo> gpus) {
        this(gpus, null);
    }

    GpuBinding(List<GpuInfo> gpus, String owner) {
        this.gpus = List.copyOf(gpus);
        this.owner = owner;
    }

    /** Whose share of the GPU slots this binding counts against (a tenant), or null. */
    String owner() {
        return owner;
    }

    public List<GpuInfo> gpus() {
        return gpus;
    }

    public boolean isEmpty() {
        return gpus.isEmpty();
    }

    /** The worker's CUDA_VISIBLE_DEVICES value: the bound GPUs' UUIDs, comma-separated. */
    public String cudaVisibleDevices() {
        return gpus.stream().map(GpuInfo::uuid).collect(Collectors.joining(","));
    }

    /** True the first time only, so that a double release cannot free someone else's slot. */
    boolean markReleased() {
        return released.compareAndSet(false, true);
    }

    @Override
    public String toString() {
        return gpus.stream().map(g -> Integer.toString(g.index())).collect(Collectors.joining(",", "[", "]"));
    }
}
