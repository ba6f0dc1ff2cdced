package io.vmcuda.appliance.auth;

import java.net.InetAddress;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.Iterator;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Online guessing of tokens, per source: after {@code limit} failed authentications within a minute,
 * further HELLOs from that source are refused without being checked until the oldest failure is a minute
 * old ({@code control.auth_failures_per_minute}, 0 = off). A success does not reset the count. A source is
 * an IPv4 address or an IPv6 /64 (one host can take any address of its /64). Loopback is not throttled:
 * clients on the appliance itself are its operator's, and a lockout there would lock out every co-located
 * tenant. Memory is bounded: at most {@link #MAX_SOURCES} sources are tracked; past that, stale ones go, and
 * new sources are counted only as room frees up (never are existing lockouts dropped to make room).
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
    public long lockedSeconds(InetAddress address, long nowNanos) {
        InetAddress source = source(address);
        if (limit <= 0 || source == null) return 0;
        Deque<Long> q = failures.get(source);
        if (q == null) return 0;
        synchronized (q) {
            expire(q, nowNanos);
            if (q.size() < limit) return 0;
            return Math.max(1, (q.peekFirst() + WINDOW_NANOS - nowNanos + 999_999_999L) / 1_000_000_000L);
        }
    }

    public void failed(InetAddress address, long nowNanos) {
        InetAddress source = source(address);
        if (limit <= 0 || source == null) return;
        if (failures.size() >= MAX_SOURCES && !failures.containsKey(source)) {
            evictStale(nowNanos);
            if (failures.size() >= MAX_SOURCES) return; // full of live sources: this one is not counted yet
        }
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
    }

    /** What is counted: the IPv4 address, the IPv6 /64, or null (loopback, not throttled). */
    static InetAddress source(InetAddress a) {
        if (a == null || a.isLoopbackAddress()) return null;
        if (a instanceof java.net.Inet6Address) {
            byte[] prefix = java.util.Arrays.copyOf(a.getAddress(), 16);
            java.util.Arrays.fill(prefix, 8, 16, (byte) 0);
            try {
                return InetAddress.getByAddress(prefix);
            } catch (java.net.UnknownHostException e) {
                throw new IllegalStateException(e);
            }
        }
        return a;
    }
}
