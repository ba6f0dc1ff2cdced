package io.vmcuda.appliance.session;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import java.util.List;
import org.junit.jupiter.api.Test;

/** The call-time fields of a worker's STATS line, and their sums across sessions. */
class CallLatencyTest {
    private static String[] stats(String tail) {
        return ("STATS 1 2 3 " + tail).split(" ");
    }

    @Test
    void parsesTheTotalAndEveryBucket() {
        CallLatency l = CallLatency.parse(stats("5000 1 2 0 0 0 0 0 0 0 0 0 7"), 4);
        assertEquals(5000, l.totalNanos());
        assertArrayEquals(new long[] {1, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 7}, l.buckets());
    }

    @Test
    void anythingElseIsNotCallTimes() {
        assertNull(CallLatency.parse(stats("5000 1 2"), 4), "too few buckets");
        assertNull(CallLatency.parse(stats("5000 1 2 0 0 0 0 0 0 0 0 0 7 8"), 4), "too many");
        assertNull(CallLatency.parse(stats("x 1 2 0 0 0 0 0 0 0 0 0 7"), 4), "not a number");
        assertNull(CallLatency.parse(stats("-1 1 2 0 0 0 0 0 0 0 0 0 7"), 4), "negative");
        assertNull(CallLatency.parse("STATS 1 2 3".split(" "), 4), "an older worker's line has none");
    }

    @Test
    void bucketBoundsGrowFourfoldFromFourMicroseconds() {
        double[] b = CallLatency.upperBoundsSeconds();
        assertEquals(CallLatency.BUCKETS, b.length);
        assertEquals(4e-6, b[0], 1e-12);
        assertEquals(16e-6, b[1], 1e-12);
        assertEquals(4e-6 * Math.pow(4, 10), b[10], 1e-9);
        assertEquals(Double.POSITIVE_INFINITY, b[11]);
    }

    @Test
    void endedAndRunningSessionsAddUp() {
        CallLatency.Sum ended = new CallLatency.Sum();
        ended.add(CallLatency.parse(stats("100 1 0 0 0 0 0 0 0 0 0 0 0"), 4));
        CallLatency total = ended.plus(List.of(CallLatency.parse(stats("50 0 2 0 0 0 0 0 0 0 0 0 1"), 4)));
        assertEquals(150, total.totalNanos());
        assertArrayEquals(new long[] {1, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}, total.buckets());
    }
}
