package io.vmcuda.appliance.session;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.vmcuda.appliance.auth.Tenant;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * A worker's STATS lines are its own word, and the worker runs the tenant's code, which can write any line on its
 * link (an attack helper wrote negative and huge figures: /metrics then stopped rendering for every tenant). A
 * session keeps only reports whose running totals do not shrink, and the daemon's sums saturate.
 */
class WorkerReportsTest {
    private static Session session(String tenant) {
        return new Session(1, new byte[32], "prog", "sha", null, Path.of("/nonexistent"), new SetupTimings(false, 0, 0),
                new Tenant(tenant, new byte[32], 0, 0, 0));
    }

    private static CallLatency latency(long total, long firstBucket) {
        long[] b = new long[CallLatency.BUCKETS];
        b[0] = firstBucket;
        return new CallLatency(total, b);
    }

    @Test
    void negativeOrShrinkingReportsChangeNothing() {
        Session s = session("b");
        s.stats(100, 200, 3, latency(5000, 3));
        s.stats(-9_200_000_000_000_000_000L, -9_200_000_000_000_000_000L, -1, null);
        s.stats(50, 300, 4, null); // bytes to the GPU shrank
        s.stats(150, 300, 4, latency(4000, 4)); // call time shrank
        assertEquals(100, s.bytesH2d());
        assertEquals(200, s.bytesD2h());
        assertEquals(3, s.calls());
        assertEquals(5000, s.callLatency().totalNanos());
        s.stats(150, 300, 4, latency(6000, 4));
        assertEquals(150, s.bytesH2d());
        assertEquals(4, s.calls());
        assertEquals(6000, s.callLatency().totalNanos());
    }

    @Test
    void sumsOfHugeReportsSaturateInsteadOfWrappingNegative() {
        DaemonMetrics m = new DaemonMetrics();
        for (int i = 0; i < 3; i++) {
            Session s = session("b");
            s.stats(9_000_000_000_000_000_000L, 9_000_000_000_000_000_000L, 1, latency(9_000_000_000_000_000_000L, 1));
            m.sessionEnded(s);
        }
        assertEquals(Long.MAX_VALUE, m.endedBytesH2d());
        assertEquals(Long.MAX_VALUE, m.endedBytesD2h());
        assertEquals(Long.MAX_VALUE, m.tenants().get("b").endedBytesH2d());
        assertEquals(Long.MAX_VALUE, m.tenants().get("b").endedCalls.plus(List.of(latency(Long.MAX_VALUE, 1))).totalNanos());
        assertEquals(Long.MAX_VALUE, DaemonMetrics.saturatingAdd(Long.MAX_VALUE, 1));
        assertEquals(5, DaemonMetrics.saturatingAdd(2, 3));
    }
}
