package io.vmcuda.appliance.auth;

import java.net.InetAddress;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.Iterator;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Online guessing of tokens, per source address: after {@code limit} failed authentications within a
 * minute, further HELLOs from that address are refused without being checked until the oldest failure
 * is a minute old ({@code control.auth_failures_per_minute}, 0 = off). A success does not reset the count.
 * Memory is bounded: at most {@link #MAX_SOURCES} addresses are tracked (the stalest go first).
 */
public final class AuthThrottle {
    static final long WINDOW_NANOS = 60_000_000_000L;
    static final int MAX_SOURCES = 65_536;

    private final int limit;
    private final Map<InetAddress, Deque<Long>> failures = new ConcurrentHashMap<>();

    public AuthThrottle(int limitPerMinute) {
        this.limit = limitPerMinute;
    }

    /** Seconds until {@code source} may try again, or 0 when it may now. */
    public long lockedSeconds(InetAddress source, long nowNanos) {
        if (limit <= 0 || source == null) return 0;
        Deque<Long> q = failures.get(source);
        if (q == null) return 0;
        synchronized (q) {
            expire(q, nowNanos);
            if (q.size() < limit) return 0;
            return Math.max(1, (q.peekFirst() + WINDOW_NANOS - nowNanos + 999_999_999L) / 1_000_000_000L);
        }
    }

    public void failed(InetAddress source, long nowNanos) {
        if (limit <= 0 || source == null) return;
        if (failures.size() >= MAX_SOURCES) evictStale(nowNanos);
        Deque<Long> q = failures.computeIfAbsent(source, a -> new ArrayDeque<>());
        synchronized (q) {
            expire(q, nowNanos);
            if (q.size() < limit) q.addLast(nowNanos);
        }
    }

    private static void expire(Deque<Long> q, long now) {
        while (!q.isEmpty() && now - q.peekFirst() >= WINDOW_NANOS) q.removeFirst();
    }

    private void evictStale(long now) {
        for (Iterator<Map.Entry<InetAddress, Deque<Long>>> it = failures.entrySet().iterator(); it.hasNext(); ) {
            Deque<Long> q = it.next().getValue();
            synchronized (q) {
                expire(q, now);
                if (q.isEmpty()) it.remove();
            }
        }
        if (failures.size() >= MAX_SOURCES) failures.clear(); // a flood of sources: start over rather than grow
    }
}
