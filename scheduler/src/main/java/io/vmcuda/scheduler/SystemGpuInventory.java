package io.vmcuda.scheduler;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.logging.Logger;

/**
 * The real host's GPUs: inventory from the driver API (libcuda through JNA), else from nvidia-smi, else none with a
 * reason; live usage and health from NVML in this process ({@link GpuTelemetry}), or nvidia-smi where NVML does
 * not load, sampled at most every {@link #USAGE_REFRESH_NANOS} and off the caller's thread so that placement
 * decisions never wait on the driver.
 */
public final class SystemGpuInventory implements GpuInventory {
    private static final Logger LOG = Logger.getLogger(SystemGpuInventory.class.getName());
    static final long USAGE_REFRESH_NANOS = 3_000_000_000L;

    private final List<GpuInfo> gpus;
    private final String unavailableReason;
    private final GpuTelemetry live; // NVML or nvidia-smi; null when neither answers
    private final ExecutorService sampler;
    private final AtomicBoolean sampling = new AtomicBoolean();
    private volatile Map<String, GpuUsage> lastUsage = Map.of();
    private volatile Map<String, GpuHealth> lastHealth = Map.of();
    private volatile long lastSampleNanos;

    private SystemGpuInventory(List<GpuInfo> gpus, String unavailableReason, GpuTelemetry live) {
        this.gpus = List.copyOf(gpus);
        this.unavailableReason = unavailableReason;
        this.live = live;
        this.sampler = live == null ? null : Executors.newSingleThreadExecutor(r -> {
            Thread t = new Thread(r, "gpu-usage-sampler");
            t.setDaemon(true);
            return t;
        });
    }

    /** Probes the host once; logs one line saying what was found, or why there is no GPU. */
    public static SystemGpuInventory detect() {
        NvidiaSmi smi = new NvidiaSmi("nvidia-smi");
        Optional<Path> libcuda = LibcudaLocator.find();
        String driverProblem;
        if (libcuda.isEmpty()) {
            driverProblem = LibcudaLocator.LIBRARY + " not found (no NVIDIA driver on this host)";
        } else {
            try {
                List<GpuInfo> gpus = CudaDriverQuery.query(libcuda.get());
                if (!gpus.isEmpty()) return found(gpus, "driver API via " + libcuda.get(), telemetry(smi));
                driverProblem = "the driver reports 0 devices";
            } catch (GpuQueryException e) {
                driverProblem = e.getMessage();
            } catch (Throwable t) {
                // JNA's own native part missing or refused (a noexec temp dir), or anything else from the native layer:
                // the daemon must still start, so every Throwable becomes a reason string.
                driverProblem = "CUDA driver API unusable: " + oneLine(t);
            }
        }
        try {
            List<GpuInfo> gpus = smi.inventory();
            if (!gpus.isEmpty()) {
                return found(gpus, "nvidia-smi (driver API: " + driverProblem + ")", telemetry(smi));
            }
        } catch (GpuQueryException e) {
            // nvidia-smi is only the fallback; the driver API's reason is the one worth reporting
        }
        LOG.warning("no GPU: " + driverProblem);
        return new SystemGpuInventory(List.of(), driverProblem, null);
    }

    private static SystemGpuInventory found(List<GpuInfo> gpus, String source, GpuTelemetry live) {
        StringBuilder line = new StringBuilder().append(gpus.size()).append(" GPU(s) from ").append(source);
        for (GpuInfo g : gpus) {
            line.append("; ").append(g.index()).append(": ").append(g.name()).append(' ').append(g.uuid())
                    .append(' ').append(g.memoryTotalBytes() >> 20).append(" MiB cc ").append(g.computeCapability());
        }
        LOG.info(line.toString());
        SystemGpuInventory inv = new SystemGpuInventory(gpus, null, live);
        inv.refreshUsageNow();
        return inv;
    }

    /** NVML in this process where it loads and answers, else nvidia-smi if it answers, else null. */
    private static GpuTelemetry telemetry(NvidiaSmi smi) {
        String nvmlProblem;
        try {
            GpuTelemetry nvml = GpuTelemetry.nvml(Path.of("libnvidia-ml.so.1"));
            nvml.usage();
            LOG.info("live GPU figures from " + nvml.source());
            return nvml;
        } catch (GpuQueryException e) {
            nvmlProblem = e.getMessage();
        } catch (Throwable t) { // JNA's own native part missing or refused (a noexec temp dir): nvidia-smi then
            nvmlProblem = "NVML through JNA unusable: " + oneLine(t);
        }
        try {
            smi.usage();
            LOG.info("live GPU figures from nvidia-smi (NVML: " + nvmlProblem + ")");
            return smi;
        } catch (GpuQueryException e) {
            LOG.info("live GPU memory/utilization unavailable: NVML: " + nvmlProblem + "; " + e.getMessage());
            return null;
        }
    }

    @Override
    public List<GpuInfo> gpus() {
        return gpus;
    }

    @Override
    public String unavailableReason() {
        return unavailableReason;
    }

    @Override
    public Optional<GpuUsage> usage(String uuid) {
        if (live != null && System.nanoTime() - lastSampleNanos > USAGE_REFRESH_NANOS
                && sampling.compareAndSet(false, true)) {
            sampler.execute(() -> {
                try {
                    refreshUsageNow();
                } finally {
                    sampling.set(false);
                }
            });
        }
        return Optional.ofNullable(lastUsage.get(uuid));
    }

    @Override
    public Optional<GpuHealth> health(String uuid) {
        usage(uuid); // sampled together
        return Optional.ofNullable(lastHealth.get(uuid));
    }

    @Override
    public Optional<java.util.Map<Long, Long>> processMemory() {
        if (live == null) return Optional.empty();
        try {
            return Optional.of(live.processMemory());
        } catch (GpuQueryException e) {
            LOG.fine("per-process GPU memory unavailable: " + e.getMessage());
            return Optional.empty();
        }
    }

    private void refreshUsageNow() {
        if (live == null) return;
        try {
            lastUsage = live.usage();
        } catch (GpuQueryException e) {
            LOG.fine("GPU usage sample failed: " + e.getMessage());
        }
        try {
            lastHealth = live.health();
        } catch (GpuQueryException e) {
            lastHealth = Map.of(); // no stale temperature or ECC count for a GPU that stopped answering
            LOG.fine("GPU health sample failed: " + e.getMessage());
        }
        lastSampleNanos = System.nanoTime();
    }

    private static String oneLine(Throwable t) {
        String m = t.getMessage();
        String s = t.getClass().getSimpleName() + (m == null ? "" : ": " + m);
        int nl = s.indexOf('\n');
        return nl < 0 ? s : s.substring(0, nl);
    }
}
