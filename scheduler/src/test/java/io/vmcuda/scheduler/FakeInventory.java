package io.vmcuda.scheduler;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/** An inventory of n made-up GPUs whose memory use the test sets. */
final class FakeInventory implements GpuInventory {
    private final List<GpuInfo> gpus = new ArrayList<>();
    private final Map<String, GpuUsage> usage = new HashMap<>();

    FakeInventory(int n) {
        for (int i = 0; i < n; i++) {
            gpus.add(new GpuInfo(i, "Fake GPU", String.format("GPU-%08x-0000-0000-0000-000000000000", i),
                    80L << 30, "9.0"));
        }
    }

    FakeInventory memoryUsed(int index, long bytes) {
        usage.put(gpus.get(index).uuid(), new GpuUsage(bytes, 0));
        return this;
    }

    @Override
    public List<GpuInfo> gpus() {
        return gpus;
    }

    @Override
    public String unavailableReason() {
        return gpus.isEmpty() ? "no GPU in this fake" : null;
    }

    @Override
    public Optional<GpuUsage> usage(String uuid) {
        return Optional.ofNullable(usage.get(uuid));
    }
}
