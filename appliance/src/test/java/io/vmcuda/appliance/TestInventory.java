package io.vmcuda.appliance;

import io.vmcuda.scheduler.GpuInfo;
import io.vmcuda.scheduler.GpuInventory;
import io.vmcuda.scheduler.GpuUsage;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/** Inventories for daemon tests: none (with a reason) or n made-up GPUs that nothing ever runs on. */
final class TestInventory implements GpuInventory {
    static final String NO_GPU_REASON = "libcuda.so.1 not found (test inventory)";

    private final List<GpuInfo> gpus;

    private TestInventory(List<GpuInfo> gpus) {
        this.gpus = gpus;
    }

    static TestInventory none() {
        return new TestInventory(List.of());
    }

    static TestInventory gpus(int n) {
        List<GpuInfo> g = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            g.add(new GpuInfo(i, "Test GPU", String.format("GPU-%08x-1111-2222-3333-444444444444", i), 16L << 30, "9.0"));
        }
        return new TestInventory(g);
    }

    @Override
    public List<GpuInfo> gpus() {
        return gpus;
    }

    @Override
    public String unavailableReason() {
        return gpus.isEmpty() ? NO_GPU_REASON : null;
    }

    @Override
    public Optional<GpuUsage> usage(String uuid) {
        return Optional.empty();
    }
}
