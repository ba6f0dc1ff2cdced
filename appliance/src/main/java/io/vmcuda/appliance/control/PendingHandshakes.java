package io.vmcuda.appliance.control;

import java.net.InetAddress;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Connections that have not finished their HELLO yet, in all and per source address
 * ({@code control.max_handshakes}, {@code control.max_handshakes_per_source}). A flood of idle
 * connections from one address then cannot take the descriptors and event-loop time that other clients'
 * handshakes need; each such connection also ends at control.handshake_timeout_s.
 */
final class PendingHandshakes {
    private final int maxTotal;
    private final int maxPerSource;
    private final AtomicInteger total = new AtomicInteger();
    private final Map<InetAddress, Integer> bySource = new ConcurrentHashMap<>();

    PendingHandshakes(int maxTotal, int maxPerSource) {
        this.maxTotal = maxTotal;
        this.maxPerSource = maxPerSource;
    }

    static PendingHandshakes unlimited() {
        return new PendingHandshakes(Integer.MAX_VALUE, Integer.MAX_VALUE);
    }

    /** Why this connection may not start a handshake now, or null when it was admitted (then call {@link #release}). */
    String admit(InetAddress source) {
        if (total.incrementAndGet() > maxTotal) {
            total.decrementAndGet();
            return "the appliance has " + maxTotal + " connections awaiting their handshake (control.max_handshakes)";
        }
        if (source != null) {
            boolean[] admitted = {false};
            // count and check in one atomic step per address, so that a concurrent release cannot lose a count
            bySource.compute(source, (a, n) -> {
                int held = n == null ? 0 : n;
                admitted[0] = held < maxPerSource;
                return admitted[0] ? held + 1 : (held == 0 ? null : held);
            });
            if (!admitted[0]) {
                total.decrementAndGet();
                return "too many connections from " + source.getHostAddress() + " await their handshake ("
                        + maxPerSource + ", control.max_handshakes_per_source)";
            }
        }
        return null;
    }

    void release(InetAddress source) {
        total.decrementAndGet();
        if (source == null) return;
        bySource.computeIfPresent(source, (a, n) -> n <= 1 ? null : n - 1);
    }
}
