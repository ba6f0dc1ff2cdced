package io.vmcuda.scheduler.pool;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

class PoolPolicyTest {
    private static final long GIB = 1L << 30;

    private static PoolGpu gpu(String uuid, String name, long memoryGiB, int sessions) {
        return new PoolGpu(uuid, name, memoryGiB * GIB, "9.0", sessions, 0);
    }

    private static PoolAppliance appliance(String name, String host, int slots, PoolGpu... gpus) {
        return new PoolAppliance(name, name + ":7070", Set.of(host), slots, false, List.of(gpus));
    }

    private static final List<PoolAppliance> POOL = List.of(
            appliance("a", "host-a", 4, gpu("a0", "NVIDIA H100 80GB HBM3", 80, 3), gpu("a1", "NVIDIA H100 80GB HBM3", 80, 1)),
            appliance("b", "host-b", 4, gpu("b0", "NVIDIA H100 80GB HBM3", 80, 2), gpu("b1", "NVIDIA H100 80GB HBM3", 80, 2)),
            appliance("c", "host-c", 4, gpu("c0", "NVIDIA A100-SXM4-40GB", 40, 4), gpu("c1", "NVIDIA A100-SXM4-40GB", 40, 0)));

    private static PoolRequest any(int gpus) {
        return new PoolRequest(gpus, "", "", 0);
    }

    @Test
    void leastLoadedTakesTheEmptiestGpuThenTheEmptiestAppliance() {
        PoolChoice c = PoolPolicy.LEAST_LOADED.choose(POOL, any(1)).orElseThrow();
        assertEquals("c", c.appliance().name());
        assertEquals(List.of("c1"), c.gpuUuids());
        // two GPUs: a and b both have 4 sessions on theirs, b's spread evenly; c has only one GPU with room
        PoolChoice two = PoolPolicy.LEAST_LOADED.choose(POOL, any(2)).orElseThrow();
        assertEquals("b", two.appliance().name());
    }

    @Test
    void packFillsTheFullestAppliance() {
        PoolChoice c = PoolPolicy.PACK.choose(POOL, any(1)).orElseThrow();
        assertEquals("a", c.appliance().name());
        assertEquals(List.of("a0"), c.gpuUuids()); // 3 of 4 slots: the fullest GPU with room
    }

    @Test
    void localityPrefersTheApplianceSharingMemoryWithTheClientHost() {
        PoolChoice c = PoolPolicy.LOCALITY.choose(POOL, new PoolRequest(1, "host-a", "", 0)).orElseThrow();
        assertEquals("a", c.appliance().name());
        assertEquals(List.of("a1"), c.gpuUuids());
        // an unknown host: least loaded
        assertEquals("c", PoolPolicy.LOCALITY.choose(POOL, new PoolRequest(1, "elsewhere", "", 0)).orElseThrow()
                .appliance().name());
    }

    @Test
    void modelAndMemoryRequestsFilterGpus() {
        assertEquals("c", PoolPolicy.LEAST_LOADED.choose(POOL, new PoolRequest(1, "", "a100", 0)).orElseThrow()
                .appliance().name());
        PoolChoice big = PoolPolicy.LEAST_LOADED.choose(POOL, new PoolRequest(1, "", "", 64 * GIB)).orElseThrow();
        assertTrue(Set.of("a", "b").contains(big.appliance().name()));
        assertTrue(PoolPolicy.LEAST_LOADED.choose(POOL, new PoolRequest(1, "", "V100", 0)).isEmpty());
        assertTrue(PoolPolicy.LEAST_LOADED.choose(POOL, new PoolRequest(2, "", "a100", 0)).isEmpty()); // c0 is full
    }

    @Test
    void fullAndDrainingAppliancesAreNotCandidates() {
        List<PoolAppliance> pool = List.of(
                appliance("full", "h", 1, gpu("f0", "GPU", 80, 1)),
                new PoolAppliance("draining", "d:7070", Set.of(), 4, true, List.of(gpu("d0", "GPU", 80, 0))));
        assertTrue(PoolPolicy.LEAST_LOADED.choose(pool, any(1)).isEmpty());
        assertTrue(PoolPolicy.PACK.choose(List.of(), any(1)).isEmpty());
    }

    @Test
    void policyNamesParse() {
        assertEquals(PoolPolicy.PACK, PoolPolicy.parse(" Pack "));
        assertEquals(PoolPolicy.LOCALITY, PoolPolicy.parse("locality"));
        try {
            PoolPolicy.parse("random");
        } catch (IllegalArgumentException e) {
            assertTrue(e.getMessage().contains("least-loaded, pack or locality"));
            return;
        }
        throw new AssertionError("parsed 'random'");
    }
}
