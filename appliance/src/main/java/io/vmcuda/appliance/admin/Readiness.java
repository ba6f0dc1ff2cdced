package io.vmcuda.appliance.admin;

import io.vmcuda.scheduler.GpuInventory;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * Whether this appliance can take sessions now (GET /readyz): a load balancer, the pool or systemd's
 * health checks send work only to a ready one. Ready means the client port is listening (the admin port
 * only answers after it is), the GPU inventory has at least one usable GPU, and the state directory
 * takes a write (uploads, the module cache and session records all need it). Liveness (/healthz) is only
 * that the daemon answers.
 */
public final class Readiness {
    private final GpuInventory inventory;
    private final Path stateDir;
    private final java.util.function.BooleanSupplier stopping;

    public Readiness(GpuInventory inventory, Path stateDir) {
        this(inventory, stateDir, () -> false);
    }

    /** @param stopping true once the daemon drains before it stops (it takes no new sessions) */
    public Readiness(GpuInventory inventory, Path stateDir, java.util.function.BooleanSupplier stopping) {
        this.inventory = inventory;
        this.stateDir = stateDir;
        this.stopping = stopping;
    }

    /** What keeps the appliance from being ready; empty when it is. */
    public List<String> problems() {
        List<String> why = new ArrayList<>();
        if (stopping.getAsBoolean()) why.add("stopping: running sessions may finish (session.drain_s), new ones are refused");
        if (inventory.gpus().isEmpty()) {
            String reason = inventory.unavailableReason();
            why.add("no usable GPU" + (reason == null ? "" : ": " + reason));
        }
        if (stateDir != null) {
            try {
                Path probe = Files.createTempFile(stateDir, ".readyz-", ".probe");
                Files.delete(probe);
            } catch (IOException | RuntimeException e) {
                why.add("state directory " + stateDir + " takes no write: " + e.getMessage());
            }
        }
        return why;
    }
}
