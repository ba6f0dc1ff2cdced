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
    private final java.nio.file.Path stateDir;
    private final io.vmcuda.appliance.pool.Pool pool;
    private volatile java.util.function.BooleanSupplier stopping = () -> false;
    private volatile XidWatch xids;

    public StatusSource(String version, GpuInventory inventory, GpuScheduler scheduler, DaemonMetrics metrics,
                        java.util.function.Supplier<Collection<Session>> activeSessions) {
        this(version, inventory, scheduler, metrics, activeSessions, null, null);
    }

    /**
     * @param stateDir the daemon's state directory, whose writability /readyz checks (null: not checked)
     * @param pool     the pool of appliances this one is in (null: none), for /metrics' cluster labels
     */
    public StatusSource(String version, GpuInventory inventory, GpuScheduler scheduler, DaemonMetrics metrics,
                        java.util.function.Supplier<Collection<Session>> activeSessions, java.nio.file.Path stateDir,
                        io.vmcuda.appliance.pool.Pool pool) {
        this.stateDir = stateDir;
        this.pool = pool;
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

    /** The GPUs' XID errors for /metrics (null: not watched). Set before the admin server starts. */
    public void watchXids(XidWatch xids) {
        this.xids = xids;
    }

    XidWatch xids() {
        return xids;
    }

    /** /readyz says "stopping" while this is true (the daemon drains its sessions). */
    public void stoppingWhen(java.util.function.BooleanSupplier stopping) {
        this.stopping = stopping;
    }

    Readiness readiness() {
        return new Readiness(inventory, stateDir, stopping);
    }

    /** Null when the appliance is not in a pool. */
    io.vmcuda.appliance.pool.Pool pool() {
        return pool;
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
