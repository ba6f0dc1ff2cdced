package io.vmcuda.appliance.session;

import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.logging.Logger;

/**
 * One tenant's open connections against its cap, and the connections its workers hold (whose end the daemon
 * learns only from a scan, see {@link ConnectionSlot}). Every method holds the object's monitor; none blocks.
 */
final class TenantCount {
    private static final Logger LOG = Logger.getLogger(TenantConnections.class.getName());

    private int cap;
    /** The REFUSED message, which also names the setting: the user's one line. */
    private String capMessage;
    /** The setting the cap comes from, for the log. */
    private String setting;
    /** "tenant 'NAME'", or what the clients of an appliance without tenants are called: for the log. */
    private final String tenant;
    private int open;
    private final Set<ConnectionSlot> inWorkers = new HashSet<>();
    private boolean scanning;
    private boolean scannedBefore;
    private long lastScanNanos;
    /** Connections refused since the tenant last reached its cap: logged once per such burst, not each. */
    private int refusedInBurst;

    TenantCount(String tenant, int cap, String setting, String capMessage) {
        this.tenant = tenant;
        this.cap = cap;
        this.setting = setting;
        this.capMessage = capMessage;
    }

    /** A reloaded configuration's cap (tenant.NAME.max_connections): open connections keep counting against it. */
    synchronized void recap(int cap, String setting, String capMessage) {
        this.cap = cap;
        this.setting = setting;
        this.capMessage = capMessage;
    }

    synchronized int cap() {
        return cap;
    }

    synchronized String capMessage() {
        return capMessage;
    }

    /** A place for one more connection, or null at the cap. */
    synchronized ConnectionSlot tryTake(long inode) {
        if (open >= cap) return null;
        open++;
        if (refusedInBurst > 0) {
            LOG.info("connection cap no longer reached by " + tenant + " (" + cap + " open connections): "
                    + refusedInBurst + " connection(s) were refused meanwhile");
            refusedInBurst = 0;
        }
        return new ConnectionSlot(this, inode);
    }

    /** Counts a refusal; the first of a burst is logged, naming the tenant and its cap. */
    synchronized void refused() {
        if (refusedInBurst++ == 0) {
            LOG.warning("connection cap reached by " + tenant + ": " + cap + " open connections (" + setting
                    + "); refusing new ones until some close (one line per burst); connections already open and "
                    + "other tenants' are not affected");
        }
    }

    synchronized int open() {
        return open;
    }

    synchronized void handingOver(ConnectionSlot s) {
        if (s.state == ConnectionSlot.State.DAEMON) s.state = ConnectionSlot.State.HANDING_OVER;
    }

    synchronized void daemonCopyClosed(ConnectionSlot s) {
        switch (s.state) {
            case DAEMON -> release(s);
            case HANDING_OVER -> {
                // the worker holds its own descriptor now: the connection is open until a scan or the session says not
                s.state = ConnectionSlot.State.IN_WORKER;
                inWorkers.add(s);
            }
            default -> { }
        }
    }

    synchronized boolean isReleased(ConnectionSlot s) {
        return s.state == ConnectionSlot.State.RELEASED;
    }

    synchronized void release(ConnectionSlot s) {
        if (s.state == ConnectionSlot.State.RELEASED) return;
        if (s.state == ConnectionSlot.State.IN_WORKER) inWorkers.remove(s);
        s.state = ConnectionSlot.State.RELEASED;
        open--;
    }

    /**
     * The connections in workers a scan should look for, or null when none should run now: one is running,
     * the last began less than {@code minInterval} ago (a tenant hammering at its cap costs at most one
     * scan per interval), or no connection in a worker has a known socket.
     */
    synchronized List<ConnectionSlot> startScan(long nowNanos, long minIntervalNanos) {
        if (scanning || (scannedBefore && nowNanos - lastScanNanos < minIntervalNanos)) return null;
        List<ConnectionSlot> look = inWorkers.stream().filter(s -> s.inode > 0).toList();
        if (look.isEmpty()) return null;
        scanning = true;
        scannedBefore = true;
        lastScanNanos = nowNanos;
        return look;
    }

    /** Gives back the places of the scanned connections whose sockets no process holds any more. */
    synchronized void finishScan(List<ConnectionSlot> looked, Set<Long> closedInodes) {
        scanning = false;
        for (ConnectionSlot s : looked) {
            if (closedInodes.contains(s.inode)) release(s);
        }
    }
}
