package io.vmcuda.appliance.session;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.vmcuda.scheduler.GpuInfo;
import java.util.List;
import org.junit.jupiter.api.Test;

/** What a worker gets as CUDA_VISIBLE_DEVICES for a session bound to three GPUs, given the client's value. */
class ClientVisibleDevicesTest {
    private static final List<GpuInfo> BOUND = List.of(
            new GpuInfo(4, "H200", "GPU-aaaa1111-0000-0000-0000-000000000000", 1L << 30, "9.0"),
            new GpuInfo(5, "H200", "GPU-bbbb2222-0000-0000-0000-000000000000", 1L << 30, "9.0"),
            new GpuInfo(7, "H200", "GPU-bbbb3333-0000-0000-0000-000000000000", 1L << 30, "9.0"));

    private static String uuids(int... i) {
        StringBuilder b = new StringBuilder();
        for (int k : i) b.append(b.length() == 0 ? "" : ",").append(BOUND.get(k).uuid());
        return b.toString();
    }

    @Test
    void noClientValueMeansEveryBoundGpu() {
        assertEquals(uuids(0, 1, 2), ClientVisibleDevices.workerValue(BOUND, null));
    }

    @Test
    void indicesCountWithinTheSessionAndKeepTheClientsOrder() {
        assertEquals(uuids(2, 0), ClientVisibleDevices.workerValue(BOUND, "2,0"));
        assertEquals(uuids(1), ClientVisibleDevices.workerValue(BOUND, " 1 "));
    }

    @Test
    void uuidsAndUniquePrefixesNameBoundGpus() {
        assertEquals(uuids(1, 0), ClientVisibleDevices.workerValue(BOUND, "GPU-bbbb2222,gpu-aaaa"));
    }

    @Test
    void readingStopsAtTheFirstEntryThatNamesNoBoundGpuAsTheDriverDoes() {
        assertEquals(uuids(0), ClientVisibleDevices.workerValue(BOUND, "0,3,1"), "index past the session's GPUs");
        assertEquals("", ClientVisibleDevices.workerValue(BOUND, "GPU-bbbb,0"), "a prefix matching two GPUs");
        assertEquals("", ClientVisibleDevices.workerValue(BOUND, "GPU-ffff"), "a GPU of another session");
        assertEquals("", ClientVisibleDevices.workerValue(BOUND, "-1"));
        assertEquals("", ClientVisibleDevices.workerValue(BOUND, ""), "set but empty: no GPU");
        assertEquals(uuids(1), ClientVisibleDevices.workerValue(BOUND, "1,x"));
    }
}
