package io.vmcuda.appliance.session;

import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;

/** Counters behind /metrics that outlive individual sessions. */
public final class DaemonMetrics {
    private final AtomicLong sessionsTotal = new AtomicLong();
    private final AtomicLong refusedTotal = new AtomicLong();
    private final AtomicLong authFailures = new AtomicLong();
    private final AtomicLong handshakeTimeouts = new AtomicLong();
    private final AtomicLong handshakesRefused = new AtomicLong();
    private final AtomicLong moduleHits = new AtomicLong(), moduleMisses = new AtomicLong(), moduleBytesSaved = new AtomicLong();
    private final AtomicLong protocolErrors = new AtomicLong();
    private final AtomicLong quotaKills = new AtomicLong();
    private final AtomicLong memoryLimitKills = new AtomicLong();
    /* bytes of ended sessions: the workers' own word (STATS lines), added saturating (saturatingAdd) */
    private final AtomicLong endedBytesH2d = new AtomicLong();
    private final AtomicLong endedBytesD2h = new AtomicLong();
    private final LongAdder workerStartCount = new LongAdder();
    private final LongAdder workerStartNanos = new LongAdder();

    /** Per tenant: sessions started, and bytes moved by its sessions that have ended. */
    public static final class TenantTotals {
        final LongAdder sessions = new LongAdder();
        final AtomicLong endedBytesH2d = new AtomicLong();
        final AtomicLong endedBytesD2h = new AtomicLong();
        final CallLatency.Sum endedCalls = new CallLatency.Sum();

        public long sessions() {
            return sessions.sum();
        }

        public long endedBytesH2d() {
            return endedBytesH2d.get();
        }

        public long endedBytesD2h() {
            return endedBytesD2h.get();
        }

        /** The call times of the tenant's ended sessions plus those of {@code running} (its active ones). */
        public CallLatency callLatency(Iterable<CallLatency> running) {
            return endedCalls.plus(running);
        }
    }

    private final java.util.concurrent.ConcurrentHashMap<String, TenantTotals> perTenant =
            new java.util.concurrent.ConcurrentHashMap<>();

    public void sessionStarted() {
        sessionsTotal.incrementAndGet();
    }

    void sessionStarted(io.vmcuda.appliance.auth.Tenant tenant) {
        sessionStarted();
        perTenant.computeIfAbsent(tenant.name(), k -> new TenantTotals()).sessions.increment();
    }

    /** Every tenant that has started a session since the daemon started, by name. */
    public java.util.Map<String, TenantTotals> tenants() {
        return java.util.Collections.unmodifiableMap(perTenant);
    }

    public void refused() {
        refusedTotal.incrementAndGet();
    }

    /**
     * {@code a + b} for figures that are never negative, at most Long.MAX_VALUE: sums of what workers report (which
     * run the tenants' code) must not wrap negative, or /metrics would refuse to render them.
     */
    public static long saturatingAdd(long a, long b) {
        return b > Long.MAX_VALUE - a ? Long.MAX_VALUE : a + b;
    }

    void sessionEnded(Session s) {
        endedBytesH2d.accumulateAndGet(s.bytesH2d(), DaemonMetrics::saturatingAdd);
        endedBytesD2h.accumulateAndGet(s.bytesD2h(), DaemonMetrics::saturatingAdd);
        TenantTotals t = perTenant.computeIfAbsent(s.tenant().name(), k -> new TenantTotals());
        t.endedBytesH2d.accumulateAndGet(s.bytesH2d(), DaemonMetrics::saturatingAdd);
        t.endedBytesD2h.accumulateAndGet(s.bytesD2h(), DaemonMetrics::saturatingAdd);
        t.endedCalls.add(s.callLatency());
    }

    void workerStarted(long nanos) {
        workerStartCount.increment();
        workerStartNanos.add(nanos);
    }

    public void authFailure() {
        authFailures.incrementAndGet();
    }

    public void handshakeTimeout() {
        handshakeTimeouts.incrementAndGet();
    }

    public void protocolError() {
        protocolErrors.incrementAndGet();
    }

    public long authFailures() {
        return authFailures.get();
    }

    /** A worker asked the module cache for an image: lent (a hit, {@code bytes} not sent by the client) or not. */
    public void moduleLookup(boolean hit, long bytes) {
        (hit ? moduleHits : moduleMisses).incrementAndGet();
        moduleBytesSaved.addAndGet(bytes);
    }

    public long moduleHits() {
        return moduleHits.get();
    }

    public long moduleMisses() {
        return moduleMisses.get();
    }

    public long moduleBytesSaved() {
        return moduleBytesSaved.get();
    }

    /** A connection closed at once: too many others await their handshake. */
    /** A session killed because its worker used more GPU memory than its tenant's quota (QuotaWatch). */
    public void quotaKill() {
        quotaKills.incrementAndGet();
    }

    public long quotaKills() {
        return quotaKills.get();
    }

    /** A session whose processes reached worker.memory_max, stopped by the kernel's OOM killer in its cgroup. */
    public void memoryLimitKill() {
        memoryLimitKills.incrementAndGet();
    }

    public long memoryLimitKills() {
        return memoryLimitKills.get();
    }

    public void handshakeRefused() {
        handshakesRefused.incrementAndGet();
    }

    public long handshakesRefused() {
        return handshakesRefused.get();
    }

    public long handshakeTimeouts() {
        return handshakeTimeouts.get();
    }

    public long protocolErrors() {
        return protocolErrors.get();
    }

    public long sessionsTotal() {
        return sessionsTotal.get();
    }

    public long refusedTotal() {
        return refusedTotal.get();
    }

    /** Bytes of sessions that have ended; add the active sessions' running counts for a total. */
    public long endedBytesH2d() {
        return endedBytesH2d.get();
    }

    public long endedBytesD2h() {
        return endedBytesD2h.get();
    }

    public long workerStartCount() {
        return workerStartCount.sum();
    }

    public double workerStartSeconds() {
        return workerStartNanos.sum() / 1e9;
    }
}
