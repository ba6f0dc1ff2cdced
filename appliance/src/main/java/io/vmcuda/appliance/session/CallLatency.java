package io.vmcuda.appliance.session;

import io.vmcuda.protocol.Wire;
import java.util.concurrent.atomic.AtomicLong;

/**
 * How long a worker's calls took, as its STATS lines report them (PROTOCOL.md "Worker ↔ daemon"): the total
 * time and a count per bucket, bucket i holding the calls under {@code CALL_LATENCY_FIRST_NS * 4^i} that no
 * earlier bucket holds, the last one unbounded (protocol/wire.spec).
 */
public record CallLatency(long totalNanos, long[] buckets) {
    public static final int BUCKETS = Wire.CALL_LATENCY_BUCKETS;
    public static final CallLatency NONE = new CallLatency(0, new long[BUCKETS]);

    /** The buckets' upper bounds in seconds; the last is +Inf. */
    public static double[] upperBoundsSeconds() {
        double[] b = new double[BUCKETS];
        double bound = Wire.CALL_LATENCY_FIRST_NS / 1e9;
        for (int i = 0; i < BUCKETS - 1; i++, bound *= 4) b[i] = bound;
        b[BUCKETS - 1] = Double.POSITIVE_INFINITY;
        return b;
    }

    /** From the fields after {@code calls} of a STATS line; null when they are not total and BUCKETS counts. */
    public static CallLatency parse(String[] fields, int from) {
        if (fields.length != from + 1 + BUCKETS) return null;
        try {
            long total = Long.parseLong(fields[from]);
            long[] b = new long[BUCKETS];
            for (int i = 0; i < BUCKETS; i++) b[i] = Long.parseLong(fields[from + 1 + i]);
            if (total < 0 || java.util.Arrays.stream(b).anyMatch(c -> c < 0)) return null;
            return new CallLatency(total, b);
        } catch (NumberFormatException e) {
            return null;
        }
    }

    /** No figure of this is below {@code earlier}'s: a later report of the same running totals. */
    boolean atLeast(CallLatency earlier) {
        if (totalNanos < earlier.totalNanos) return false;
        for (int i = 0; i < BUCKETS; i++)
            if (buckets[i] < earlier.buckets[i]) return false;
        return true;
    }

    /**
     * Running totals of the sessions that have ended (one per tenant), saturating at Long.MAX_VALUE: the figures are
     * the workers' own word, and a sum that wrapped negative would make /metrics refuse to render.
     */
    static final class Sum {
        private final AtomicLong totalNanos = new AtomicLong();
        private final AtomicLong[] buckets = new AtomicLong[BUCKETS];

        Sum() {
            for (int i = 0; i < BUCKETS; i++) buckets[i] = new AtomicLong();
        }

        void add(CallLatency l) {
            totalNanos.accumulateAndGet(l.totalNanos(), DaemonMetrics::saturatingAdd);
            for (int i = 0; i < BUCKETS; i++) buckets[i].accumulateAndGet(l.buckets()[i], DaemonMetrics::saturatingAdd);
        }

        /** This sum plus {@code more}. */
        CallLatency plus(Iterable<CallLatency> more) {
            long total = totalNanos.get();
            long[] b = new long[BUCKETS];
            for (int i = 0; i < BUCKETS; i++) b[i] = buckets[i].get();
            for (CallLatency l : more) {
                total = DaemonMetrics.saturatingAdd(total, l.totalNanos());
                for (int i = 0; i < BUCKETS; i++) b[i] = DaemonMetrics.saturatingAdd(b[i], l.buckets()[i]);
            }
            return new CallLatency(total, b);
        }
    }
}
