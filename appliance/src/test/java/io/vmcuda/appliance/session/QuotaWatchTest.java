package io.vmcuda.appliance.session;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.vmcuda.appliance.auth.Tenant;
import io.vmcuda.scheduler.GpuInfo;
import io.vmcuda.scheduler.GpuInventory;
import io.vmcuda.scheduler.GpuUsage;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The daemon's own hold on tenant memory quotas. The workers are stood in for by real process trees
 * (sh with a sleeping child: the child is what the driver would report, as a sandboxed worker is a
 * child of its launcher); the driver's per-process figures by an inventory that reports them.
 */
class QuotaWatchTest {
    private static final long MIB = 1L << 20;
    private final List<Process> started = new ArrayList<>();

    /** The driver's answer: set per test. */
    private Map<Long, Long> driverSays = Map.of();
    private final AtomicInteger asked = new AtomicInteger();
    private final GpuInventory inventory = new GpuInventory() {
        @Override
        public List<GpuInfo> gpus() {
            return List.of();
        }

        @Override
        public String unavailableReason() {
            return "test";
        }

        @Override
        public Optional<GpuUsage> usage(String uuid) {
            return Optional.empty();
        }

        @Override
        public Optional<Map<Long, Long>> processMemory() {
            asked.incrementAndGet();
            return driverSays == null ? Optional.empty() : Optional.of(driverSays);
        }
    };

    @AfterEach
    void stop() {
        for (Process p : started) {
            p.descendants().forEach(ProcessHandle::destroyForcibly);
            p.destroyForcibly();
        }
    }

    private Session session(long quotaBytes) throws Exception {
        Tenant t = new Tenant("t" + quotaBytes, new byte[32], 0, 0, quotaBytes);
        Session s = new Session(started.size() + 1, new byte[32], "prog", "sha", null, Path.of("/nonexistent"),
                new SetupTimings(false, 0, 0), t);
        Process launcher = new ProcessBuilder("sh", "-c", "sleep 60 & wait").start();
        started.add(launcher);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (launcher.descendants().findAny().isEmpty() && System.nanoTime() < deadline) Thread.sleep(10);
        s.process = launcher;
        return s;
    }

    private static long worker(Session s) {
        return s.process.descendants().findFirst().orElseThrow().pid();
    }

    @Test
    void aWorkerPastItsQuotaPlusTheSlackIsReportedWithWhatItUses() throws Exception {
        Session within = session(1024 * MIB);
        Session past = session(1024 * MIB);
        driverSays = Map.of(worker(within), 1500 * MIB, worker(past), 1024 * MIB + 512 * MIB + 1, 999_999L, 64_000 * MIB);
        List<QuotaWatch.Over> killed = new ArrayList<>();
        new QuotaWatch(inventory, 512 * MIB, killed::add).check(List.of(within, past));
        assertEquals(1, killed.size());
        assertEquals(past, killed.get(0).session());
        assertEquals(1024 * MIB + 512 * MIB + 1, killed.get(0).usedBytes());
        assertEquals(1024 * MIB, killed.get(0).quotaBytes());
    }

    @Test
    void everyProcessOfTheWorkersTreeCounts() throws Exception {
        Session s = session(100 * MIB);
        // the launcher and the worker each hold some: together they are past it
        driverSays = Map.of(s.process.pid(), 60 * MIB, worker(s), 60 * MIB);
        List<QuotaWatch.Over> killed = new ArrayList<>();
        new QuotaWatch(inventory, 0, killed::add).check(List.of(s));
        assertEquals(120 * MIB, killed.get(0).usedBytes());
    }

    @Test
    void theDriverIsNotAskedWhenNoRunningSessionHasAQuota() throws Exception {
        Session free = session(0);
        Session gone = session(100 * MIB);
        gone.process.descendants().forEach(ProcessHandle::destroyForcibly);
        gone.process.destroyForcibly().waitFor();
        List<QuotaWatch.Over> killed = new ArrayList<>();
        new QuotaWatch(inventory, 0, killed::add).check(List.of(free, gone));
        assertEquals(0, asked.get());
        assertTrue(killed.isEmpty());
    }

    @Test
    void aDriverThatCannotTellKillsNothing() throws Exception {
        Session s = session(1);
        driverSays = null;
        List<QuotaWatch.Over> killed = new ArrayList<>();
        QuotaWatch w = new QuotaWatch(inventory, 0, killed::add);
        w.check(List.of(s));
        w.check(List.of(s));
        assertEquals(2, asked.get());
        assertTrue(killed.isEmpty());
    }
}
