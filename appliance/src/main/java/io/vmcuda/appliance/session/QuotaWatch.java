package io.vmcuda.appliance.session;

import io.vmcuda.scheduler.GpuInventory;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Consumer;
import java.util.logging.Logger;

/**
 * Enforces each tenant's device-memory quota (tenant.NAME.max_memory_bytes) from outside the tenant's
 * process. The worker library counts the program's allocations, but the worker is the tenant's own
 * program, whose code runs on the appliance (its constructors do) and can reach NVIDIA's driver directly
 * or overwrite the count. So the daemon asks the driver (NVML, or nvidia-smi) every worker.quota_check_s how much
 * device memory each process uses, and kills a session whose worker process tree uses more than its
 * quota plus worker.quota_slack_bytes per GPU of the session: the CUDA context and the driver's own
 * reservations, which the quota does not count (about 0.5 GiB per GPU on an H100/H200).
 */
final class QuotaWatch {
    private static final Logger LOG = Logger.getLogger(QuotaWatch.class.getName());

    /** A session as the watch sees it: its quota, its GPUs and the pids of its worker's process tree. */
    record Watched(Session session, long quotaBytes, int gpus, List<Long> pids) {}

    /** A session past its quota, with what its processes use. */
    record Over(Session session, long usedBytes, long quotaBytes) {}

    private final GpuInventory inventory;
    private final long slackBytes;
    private final Consumer<Over> kill;
    private boolean warnedBlind;

    QuotaWatch(GpuInventory inventory, long slackBytes, Consumer<Over> kill) {
        this.inventory = inventory;
        this.slackBytes = slackBytes;
        this.kill = kill;
    }

    /** One check; asks the driver only when a running session has a quota. Blocks for the driver's answer (ms with NVML, tens of ms with nvidia-smi). */
    void check(Collection<Session> active) {
        List<Watched> watched = new ArrayList<>();
        for (Session s : active) {
            long quota = s.tenant().maxMemoryBytes();
            Process p = s.process;
            if (quota <= 0 || p == null || !p.isAlive()) continue;
            List<Long> pids = new ArrayList<>();
            pids.add(p.pid());
            p.descendants().forEach(h -> pids.add(h.pid()));
            int gpus = s.binding() == null ? 1 : Math.max(1, s.binding().gpus().size());
            watched.add(new Watched(s, quota, gpus, pids));
        }
        if (watched.isEmpty()) return;
        Optional<Map<Long, Long>> used = inventory.processMemory();
        if (used.isEmpty()) {
            if (!warnedBlind) {
                LOG.warning("tenant memory quotas are enforced only inside the workers: the driver does not report "
                        + "per-process GPU memory here (NVML's or nvidia-smi's list of compute processes)");
                warnedBlind = true;
            }
            return;
        }
        for (Over o : over(used.get(), watched, slackBytes)) kill.accept(o);
    }

    /** The sessions whose processes use more than their quota plus the slack. */
    static List<Over> over(Map<Long, Long> usedByPid, List<Watched> watched, long slackBytes) {
        List<Over> over = new ArrayList<>();
        for (Watched w : watched) {
            long used = 0;
            for (long pid : w.pids()) used += usedByPid.getOrDefault(pid, 0L);
            // each GPU of the session has its own context and driver reservations
            if (used > w.quotaBytes() + slackBytes * w.gpus()) over.add(new Over(w.session(), used, w.quotaBytes()));
        }
        return over;
    }
}
