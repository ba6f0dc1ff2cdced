package io.vmcuda.scheduler;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class GpuSchedulerTest {
    /** Long enough that a test never sees a timeout it did not ask for. */
    private static final Duration NEVER = Duration.ofHours(1);

    private final ScheduledExecutorService timer = Executors.newSingleThreadScheduledExecutor();

    @AfterEach
    void stopTimer() {
        timer.shutdownNow();
    }

    private GpuScheduler scheduler(GpuInventory inv, PlacementPolicy policy, int limit, Duration timeout) {
        return new GpuScheduler(inv, new SchedulerConfig(policy, limit, timeout), timer);
    }

    private static GpuBinding now(CompletableFuture<GpuBinding> f) {
        assertTrue(f.isDone(), "request should be granted at once");
        return f.join();
    }

    private static List<Integer> indexes(GpuBinding b) {
        return b.gpus().stream().map(GpuInfo::index).collect(Collectors.toList());
    }

    @Test
    void leastLoadedPrefersFewestSessionsThenLeastMemory() {
        FakeInventory inv = new FakeInventory(3).memoryUsed(0, 5L << 30).memoryUsed(1, 1L << 30).memoryUsed(2, 3L << 30);
        GpuScheduler s = scheduler(inv, PlacementPolicy.LEAST_LOADED, 16, NEVER);
        assertEquals(List.of(1), indexes(now(s.acquire(1))));
        assertEquals(List.of(2), indexes(now(s.acquire(1))));
        assertEquals(List.of(0), indexes(now(s.acquire(1))));
        // all at one session now; memory decides again
        assertEquals(List.of(1), indexes(now(s.acquire(1))));
    }

    @Test
    void packFillsOneGpuBeforeTheNext() {
        GpuScheduler s = scheduler(new FakeInventory(2), PlacementPolicy.PACK, 3, NEVER);
        for (int i = 0; i < 3; i++) assertEquals(List.of(0), indexes(now(s.acquire(1))));
        assertEquals(List.of(1), indexes(now(s.acquire(1))));
    }

    @Test
    void spreadRoundRobinsAcrossGpus() {
        GpuScheduler s = scheduler(new FakeInventory(3), PlacementPolicy.SPREAD, 16, NEVER);
        GpuBinding a = now(s.acquire(1));
        GpuBinding b = now(s.acquire(1));
        GpuBinding c = now(s.acquire(1));
        assertEquals(List.of(0, 1, 2), List.of(indexes(a).get(0), indexes(b).get(0), indexes(c).get(0)));
        s.release(a);
        s.release(b);
        s.release(c);
        // all idle again: the least recently used GPU comes first, not GPU 0
        assertEquals(List.of(0), indexes(now(s.acquire(1))));
        assertEquals(List.of(1), indexes(now(s.acquire(1))));
    }

    @Test
    void aRequestForKGpusGetsKDistinctOnes() {
        GpuScheduler s = scheduler(new FakeInventory(4), PlacementPolicy.LEAST_LOADED, 16, NEVER);
        GpuBinding b = now(s.acquire(3));
        assertEquals(3, b.gpus().stream().map(GpuInfo::uuid).distinct().count());
        assertEquals(b.gpus().stream().map(GpuInfo::uuid).collect(Collectors.joining(",")), b.cudaVisibleDevices());
    }

    @Test
    void moreGpusThanTheApplianceHasFailsAtOnce() {
        GpuScheduler s = scheduler(new FakeInventory(2), PlacementPolicy.LEAST_LOADED, 16, NEVER);
        ExecutionException e = assertThrows(ExecutionException.class, () -> s.acquire(3).get());
        assertInstanceOf(NoGpuAvailableException.class, e.getCause());
        assertEquals("requested 3 GPUs, this appliance has 2", e.getCause().getMessage());
    }

    @Test
    void perGpuLimitQueuesUntilTimeoutWithAClearMessage() {
        GpuScheduler s = scheduler(new FakeInventory(1), PlacementPolicy.LEAST_LOADED, 2, Duration.ofMillis(50));
        now(s.acquire(1));
        now(s.acquire(1));
        CompletableFuture<GpuBinding> third = s.acquire(1);
        ExecutionException e = assertThrows(ExecutionException.class, () -> third.get(30, TimeUnit.SECONDS));
        assertInstanceOf(NoGpuAvailableException.class, e.getCause());
        assertEquals("no GPU free within 50 ms: 1 GPU(s), each at its limit of 2 sessions", e.getCause().getMessage());
        assertEquals(0, s.queuedRequests());
    }

    @Test
    void defaultTimeoutMessageReadsInSeconds() {
        GpuScheduler s = scheduler(new FakeInventory(1), PlacementPolicy.LEAST_LOADED, 1, Duration.ofSeconds(30));
        assertEquals("30 s", GpuScheduler.format(s.config().queueTimeout()));
    }

    @Test
    void releaseWakesTheQueueInFifoOrder() throws Exception {
        GpuScheduler s = scheduler(new FakeInventory(2), PlacementPolicy.LEAST_LOADED, 1, NEVER);
        GpuBinding a = now(s.acquire(1));
        GpuBinding b = now(s.acquire(1));
        CompletableFuture<GpuBinding> wantsTwo = s.acquire(2);
        CompletableFuture<GpuBinding> wantsOne = s.acquire(1);
        assertFalse(wantsTwo.isDone());
        s.release(a);
        // one GPU is free, but the head of the queue needs two: the later request must not overtake it
        assertFalse(wantsOne.isDone());
        assertFalse(wantsTwo.isDone());
        s.release(b);
        GpuBinding two = wantsTwo.get(30, TimeUnit.SECONDS);
        assertEquals(List.of(0, 1), indexes(two));
        assertFalse(wantsOne.isDone());
        s.release(two);
        assertEquals(1, wantsOne.get(30, TimeUnit.SECONDS).gpus().size());
    }

    @Test
    void aTenantAtItsShareWaitsWithoutHoldingUpOthers() throws Exception {
        // one GPU, four slots; tenant A may hold two of them at once
        GpuScheduler s = scheduler(new FakeInventory(1), PlacementPolicy.LEAST_LOADED, 4, NEVER);
        GpuBinding a1 = now(s.acquire(1, "tenant 'a'", 2));
        now(s.acquire(1, "tenant 'a'", 2));
        CompletableFuture<GpuBinding> a3 = s.acquire(1, "tenant 'a'", 2);
        assertFalse(a3.isDone(), "a third session of A must wait: A holds its share");
        assertEquals(2, s.heldBy("tenant 'a'"));
        // B's requests come after A's waiting one and still get the free slots
        now(s.acquire(1, "tenant 'b'", 2));
        GpuBinding b2 = now(s.acquire(1, "tenant 'b'", 2));
        assertFalse(a3.isDone());
        // the GPU is full now; a slot B frees goes to nobody (A is still at its share)...
        s.release(b2);
        assertFalse(a3.isDone());
        // ...and one of A's own sessions ending lets A's waiting one in
        s.release(a1);
        assertEquals(List.of(0), indexes(a3.get(30, TimeUnit.SECONDS)));
        assertEquals(2, s.heldBy("tenant 'a'"));
    }

    @Test
    void aShareTimeoutSaysWhoseShareIsFull() {
        GpuScheduler s = scheduler(new FakeInventory(2), PlacementPolicy.LEAST_LOADED, 1, Duration.ofMillis(50));
        now(s.acquire(1, "tenant 'a'", 1));
        CompletableFuture<GpuBinding> second = s.acquire(1, "tenant 'a'", 1);
        ExecutionException e = assertThrows(ExecutionException.class, () -> second.get(30, TimeUnit.SECONDS));
        assertEquals("no GPU within 50 ms: the sessions of tenant 'a' hold 1 of the 1 GPU slot(s) of its share",
                e.getCause().getMessage());
        // a request larger than the share can never be served: refused at once
        CompletableFuture<GpuBinding> big = s.acquire(2, "tenant 'a'", 1);
        assertTrue(big.isCompletedExceptionally());
    }

    @Test
    void releasingTwiceDoesNotFreeAnotherSessionsSlot() {
        GpuScheduler s = scheduler(new FakeInventory(1), PlacementPolicy.LEAST_LOADED, 1, NEVER);
        GpuBinding a = now(s.acquire(1));
        s.release(a);
        now(s.acquire(1));
        s.release(a);
        assertFalse(s.acquire(1).isDone());
        assertEquals(1, s.activeSessionsPerGpu()[0]);
    }

    @Test
    void cancelledRequestLeavesTheQueue() throws Exception {
        GpuScheduler s = scheduler(new FakeInventory(1), PlacementPolicy.LEAST_LOADED, 1, NEVER);
        GpuBinding a = now(s.acquire(1));
        CompletableFuture<GpuBinding> first = s.acquire(1);
        CompletableFuture<GpuBinding> second = s.acquire(1);
        first.cancel(false);
        assertEquals(1, s.queuedRequests());
        s.release(a);
        assertEquals(List.of(0), indexes(second.get(30, TimeUnit.SECONDS)));
    }

    @Test
    void zeroGpuInventoryGrantsAnEmptyBindingAtOnce() {
        GpuScheduler s = scheduler(new FakeInventory(0), PlacementPolicy.LEAST_LOADED, 1, NEVER);
        GpuBinding b = now(s.acquire(4));
        assertTrue(b.isEmpty());
        assertEquals("", b.cudaVisibleDevices());
        s.release(b);
    }

    @Test
    void policyNamesParse() {
        assertEquals(PlacementPolicy.LEAST_LOADED, PlacementPolicy.parse("least-loaded"));
        assertEquals(PlacementPolicy.PACK, PlacementPolicy.parse(" Pack "));
        assertEquals(PlacementPolicy.SPREAD, PlacementPolicy.parse("spread"));
        assertThrows(IllegalArgumentException.class, () -> PlacementPolicy.parse("random"));
    }
}
