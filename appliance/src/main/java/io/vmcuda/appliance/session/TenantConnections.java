package io.vmcuda.appliance.session;

import io.netty.channel.Channel;
import io.vmcuda.appliance.auth.Tenant;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;
import java.util.logging.Logger;

/**
 * The cap on the client connections a tenant's sessions hold open at once, NEW and JOIN together
 * (tenant.NAME.max_connections, default control.tenant_max_connections; with no tenants, the cap of all
 * clients). Every CUDA-calling thread of a program holds a connection of its own, so one program with
 * thousands of threads could otherwise take the descriptors the daemon and other tenants' sessions need.
 * A connection is counted from its authenticated HELLO until it closes ({@link ConnectionSlot} says how the
 * daemon learns that); one past the cap is REFUSED with a message naming the cap and its setting, and the
 * tenant's connections already open, and every other tenant's, are not touched.
 */
public final class TenantConnections {
    private static final Logger LOG = Logger.getLogger(TenantConnections.class.getName());
    /** Least time between two scans of the socket table for one tenant at its cap. */
    static final long RESCAN_NANOS = TimeUnit.MILLISECONDS.toNanos(250);

    private final int defaultCap;
    private final SocketTable sockets;
    private final Executor blocking;
    private final LongSupplier nanoClock;
    private final ConcurrentHashMap<String, TenantCount> counts = new ConcurrentHashMap<>();
    private volatile boolean scanFailureLogged;

    /**
     * @param defaultCap control.tenant_max_connections: the cap of tenants without their own, 0 = none
     * @param blocking   runs the scans of the socket table (file reads) off the event loops
     */
    public TenantConnections(int defaultCap, Executor blocking) {
        this(defaultCap, new ProcSocketTable(), blocking, System::nanoTime);
    }

    TenantConnections(int defaultCap, SocketTable sockets, Executor blocking, LongSupplier nanoClock) {
        this.defaultCap = defaultCap;
        this.sockets = sockets;
        this.blocking = blocking;
        this.nanoClock = nanoClock;
    }

    /** No cap for anyone: what parts of the daemon built without one (tests) get. */
    public static TenantConnections unlimited() {
        return new TenantConnections(0, Runnable::run);
    }

    /**
     * Counts {@code ch} as one of {@code tenant}'s open connections. Completes with null when admitted, else
     * with the refusal to send. Call on the channel's event loop while it is open. Usually complete at once;
     * at the cap the socket table is read first (on the blocking executor), since connections the tenant's
     * workers held may have closed without the daemon seeing it.
     */
    public CompletableFuture<String> admit(Tenant tenant, Channel ch) {
        int cap = tenant.connectionCap(defaultCap);
        if (cap <= 0) return CompletableFuture.completedFuture(null);
        TenantCount count = counts.computeIfAbsent(tenant.name(), n -> new TenantCount(label(tenant), cap,
                setting(tenant), capMessage(tenant, cap)));
        if (count.cap() != cap) count.recap(cap, setting(tenant), capMessage(tenant, cap)); // reloaded
        long inode = sockets.inodeOf(ch); // now, while the descriptor is surely this connection's
        if (take(count, ch, inode)) return CompletableFuture.completedFuture(null);
        List<ConnectionSlot> look = count.startScan(nanoClock.getAsLong(), RESCAN_NANOS);
        if (look == null) return CompletableFuture.completedFuture(refuse(count));
        try {
            return CompletableFuture.supplyAsync(() -> closedSockets(look), blocking).thenApply(closed -> {
                count.finishScan(look, closed);
                return take(count, ch, inode) ? null : refuse(count);
            });
        } catch (java.util.concurrent.RejectedExecutionException stopping) {
            count.finishScan(look, Set.of());
            return CompletableFuture.completedFuture(refuse(count));
        }
    }

    private static boolean take(TenantCount count, Channel ch, long inode) {
        ConnectionSlot slot = count.tryTake(inode);
        if (slot == null) return false;
        slot.attach(ch); // a channel already closed gives the place back at once
        return true;
    }

    private static String refuse(TenantCount count) {
        count.refused();
        return count.capMessage();
    }

    private Set<Long> closedSockets(List<ConnectionSlot> look) {
        try {
            return sockets.closed(look.stream().map(s -> s.inode).toList());
        } catch (java.io.IOException | RuntimeException e) {
            if (!scanFailureLogged) {
                scanFailureLogged = true;
                LOG.warning("cannot read the socket table (" + e + "): a connection handed to a worker now counts "
                        + "against its tenant's cap until its session ends");
            }
            return Set.of();
        }
    }

    /** Open connections counted for the tenant (0 when it has no cap). */
    public int open(Tenant tenant) {
        TenantCount c = counts.get(tenant.name());
        return c == null ? 0 : c.open();
    }

    /**
     * What the client prints after "appliance refused: ", and the log says once per burst: who is at which cap,
     * why it exists, and the setting that changes it.
     */
    static String capMessage(Tenant tenant, int cap) {
        String who = tenant == Tenant.ANONYMOUS ? "the clients of this appliance have reached their"
                : "tenant '" + tenant.name() + "' has reached its";
        return who + " limit of " + cap + " open connections (one per CUDA-calling thread; appliance setting "
                + setting(tenant) + ")";
    }

    private static String setting(Tenant tenant) {
        return tenant.ownConnectionCap() ? "tenant." + tenant.name() + ".max_connections" : "control.tenant_max_connections";
    }

    private static String label(Tenant tenant) {
        return tenant == Tenant.ANONYMOUS ? "the clients of this appliance (no tenants configured)"
                : "tenant '" + tenant.name() + "'";
    }
}
