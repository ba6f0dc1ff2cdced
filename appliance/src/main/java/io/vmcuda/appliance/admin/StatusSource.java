package io.vmcuda.appliance.admin;

import io.vmcuda.appliance.session.DaemonMetrics;
import io.vmcuda.appliance.session.Session;
import io.vmcuda.scheduler.GpuInventory;
import io.vmcuda.scheduler.GpuScheduler;
import java.util.Collection;
import java.util.Comparator;
import java.util.List;
import java.util.stream.Collectors;

/** Everything the admin endpoints report, read live from the daemon's parts. */
public final class StatusSource {
    private final String version;
    private final GpuInventory inventory;
    private final GpuScheduler scheduler;
    private final DaemonMetrics metrics;
    private final java.util.function.Supplier<Collection<Session>> activeSessions;

    public StatusSource(String version, GpuInventory inventory, GpuScheduler scheduler, DaemonMetrics metrics,
                        java.util.function.Supplier<Collection<Session>> activeSessions) {
        this.version = version;
        this.inventory = inventory;
        this.scheduler = scheduler;
        this.metrics = metrics;
        this.activeSessions = activeSessions;
    }

    String version() {
        return version;
    }

    GpuInventory inventory() {
        return inventory;
    }

    GpuScheduler scheduler() {
        return scheduler;
    }

    DaemonMetrics metrics() {
        return metrics;
    }

    /** Active sessions, oldest first. */
    List<Session> sessions() {
        return activeSessions.get().stream()
                .sorted(Comparator.comparing(Session::started).thenComparingLong(Session::id))
                .collect(Collectors.toList());
    }
}
