package io.vmcuda.appliance.admin;

import io.prometheus.metrics.config.EscapingScheme;
import io.prometheus.metrics.core.metrics.CounterWithCallback;
import io.prometheus.metrics.core.metrics.GaugeWithCallback;
import io.prometheus.metrics.core.metrics.Info;
import io.prometheus.metrics.core.metrics.SummaryWithCallback;
import io.prometheus.metrics.expositionformats.PrometheusTextFormatWriter;
import io.prometheus.metrics.instrumentation.jvm.JvmMetrics;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import io.prometheus.metrics.model.snapshots.ClassicHistogramBuckets;
import io.prometheus.metrics.model.snapshots.HistogramSnapshot;
import io.prometheus.metrics.model.snapshots.Labels;
import io.prometheus.metrics.model.snapshots.Quantiles;
import io.vmcuda.appliance.pool.Pool;
import io.vmcuda.appliance.session.CallLatency;
import io.vmcuda.appliance.session.DaemonMetrics;
import io.vmcuda.appliance.session.Session;
import io.vmcuda.scheduler.GpuInfo;
import io.vmcuda.scheduler.GpuUsage;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.ToLongFunction;

/**
 * GET /metrics: the daemon's figures in the Prometheus text format, through the Prometheus Java client:
 * the daemon-wide counters, per-GPU series (labels {@code gpu}, {@code uuid}: sessions, memory, utilisation;
 * {@code vmcuda_gpu_info} names the model), per-tenant series (label {@code tenant}: sessions, bytes each
 * way), the pool's figures, and the JVM's. Values are read from the daemon's parts at each scrape
 * (callback metrics), so nothing here is a second copy of a count. In a pool every series carries the
 * labels {@code cluster} and {@code appliance}, so that one Prometheus keeps the appliances apart.
 */
final class PrometheusMetrics {
    private final PrometheusRegistry registry = new PrometheusRegistry();
    private final PrometheusTextFormatWriter writer = PrometheusTextFormatWriter.create();

    PrometheusMetrics(StatusSource src) {
        Pool pool = src.pool();
        Labels constant = pool == null ? Labels.EMPTY
                : Labels.of("cluster", pool.settings().prefix(), "appliance", pool.settings().name());
        DaemonMetrics m = src.metrics();
        counter(constant, "vmcuda_sessions", "Sessions started since the daemon started.", m::sessionsTotal);
        gauge(constant, "vmcuda_sessions_active", "Sessions whose worker is starting or running.", () -> src.sessions().size());
        counter(constant, "vmcuda_sessions_refused", "HELLOs answered with REFUSED.", m::refusedTotal);
        counter(constant, "vmcuda_auth_failures", "HELLOs refused for a missing or wrong token.", m::authFailures);
        counter(constant, "vmcuda_sessions_killed_over_quota",
                "Sessions killed because their worker used more GPU memory than the tenant's quota (driver's count).",
                m::quotaKills);
        counter(constant, "vmcuda_sessions_killed_by_memory_limit",
                "Sessions the kernel stopped because their processes reached worker.memory_max (the session's cgroup).",
                m::memoryLimitKills);
        counter(constant, "vmcuda_module_cache_hits",
                "Module images a worker found in the appliance's module cache (the client did not send them).", m::moduleHits);
        counter(constant, "vmcuda_module_cache_misses",
                "Module images a worker asked the module cache for in vain (the client sends them).", m::moduleMisses);
        counter(constant, "vmcuda_module_cache_bytes_saved",
                "Bytes of module images clients did not have to send thanks to the module cache.", m::moduleBytesSaved);
        counter(constant, "vmcuda_handshakes_refused",
                "Connections closed at once because too many others awaited their handshake, or because the frames received in "
                        + "part on all connections reached control.max_unfinished_frame_bytes.", m::handshakesRefused);
        counter(constant, "vmcuda_handshake_timeouts", "Connections closed for not completing HELLO/upload in time.",
                m::handshakeTimeouts);
        counter(constant, "vmcuda_protocol_errors", "Control connections closed for a protocol error.", m::protocolErrors);
        counter(constant, "vmcuda_bytes_h2d", "Bytes copied host to device, all sessions.",
                () -> DaemonMetrics.saturatingAdd(m.endedBytesH2d(), sum(src.sessions(), Session::bytesH2d)));
        counter(constant, "vmcuda_bytes_d2h", "Bytes copied device to host, all sessions.",
                () -> DaemonMetrics.saturatingAdd(m.endedBytesD2h(), sum(src.sessions(), Session::bytesD2h)));
        gauge(constant, "vmcuda_gpus", "GPUs in the appliance's inventory.", () -> src.inventory().gpus().size());
        SummaryWithCallback.builder().name("vmcuda_worker_start_seconds").help("Time from forking a worker to its connect-back.")
                .constLabels(constant)
                .callback(cb -> cb.call(m.workerStartCount(), m.workerStartSeconds(), Quantiles.EMPTY)).register(registry);
        registerGpus(src, constant);
        registerTenants(src, constant);
        if (pool != null) registerPool(pool, constant);
        JvmMetrics.builder().constLabels(constant).register(registry);
    }

    /** Per GPU of the inventory (fixed for the daemon's life); memory, utilisation and health when the driver tells (SystemGpuInventory). */
    private void registerGpus(StatusSource src, Labels constant) {
        List<GpuInfo> gpus = src.inventory().gpus();
        Info info = Info.builder().name("vmcuda_gpu").help("The appliance's GPUs: model and compute capability.")
                .labelNames("gpu", "uuid", "model", "compute_capability").constLabels(constant).register(registry);
        for (GpuInfo g : gpus) info.addLabelValues(Integer.toString(g.index()), g.uuid(), g.name(), g.computeCapability());
        perGpu(constant, "vmcuda_gpu_sessions", "Sessions bound to the GPU.", gpus, (cb, g) -> {
            int[] active = src.scheduler().activeSessionsPerGpu();
            cb.call(active[g.index()], Integer.toString(g.index()), g.uuid());
        });
        perGpu(constant, "vmcuda_gpu_memory_total_bytes", "The GPU's memory.", gpus,
                (cb, g) -> cb.call(g.memoryTotalBytes(), Integer.toString(g.index()), g.uuid()));
        perGpu(constant, "vmcuda_gpu_memory_used_bytes", "GPU memory in use (NVML, or nvidia-smi without it; absent when unknown).", gpus, (cb, g) -> {
            GpuUsage u = src.inventory().usage(g.uuid()).orElse(null);
            if (u != null && u.memoryUsedBytes() >= 0) cb.call(u.memoryUsedBytes(), Integer.toString(g.index()), g.uuid());
        });
        perGpu(constant, "vmcuda_gpu_utilization_ratio", "GPU utilisation, 0 to 1 (NVML, or nvidia-smi without it; absent when unknown).", gpus, (cb, g) -> {
            GpuUsage u = src.inventory().usage(g.uuid()).orElse(null);
            if (u != null && u.utilizationPercent() >= 0) cb.call(u.utilizationPercent() / 100.0, Integer.toString(g.index()), g.uuid());
        });
        // health, as DCGM-exporter users expect it per GPU (each absent where the GPU does not tell)
        perGpu(constant, "vmcuda_gpu_temperature_celsius", "GPU temperature (NVML, or nvidia-smi without it).", gpus, (cb, g) -> src.inventory()
                .health(g.uuid()).filter(h -> h.temperatureCelsius() >= 0)
                .ifPresent(h -> cb.call(h.temperatureCelsius(), Integer.toString(g.index()), g.uuid())));
        perGpu(constant, "vmcuda_gpu_power_watts", "GPU power draw (NVML, or nvidia-smi without it).", gpus, (cb, g) -> src.inventory()
                .health(g.uuid()).filter(h -> h.powerWatts() >= 0)
                .ifPresent(h -> cb.call(h.powerWatts(), Integer.toString(g.index()), g.uuid())));
        perGpu(constant, "vmcuda_gpu_sm_clock_hertz", "GPU SM clock (NVML, or nvidia-smi without it).", gpus, (cb, g) -> src.inventory()
                .health(g.uuid()).filter(h -> h.smClockMhz() >= 0)
                .ifPresent(h -> cb.call(h.smClockMhz() * 1e6, Integer.toString(g.index()), g.uuid())));
        perGpu(constant, "vmcuda_gpu_ecc_uncorrected_errors", "Uncorrected ECC errors since the driver loaded (NVML or nvidia-smi, "
                + "volatile count; absent with ECC off).", gpus, (cb, g) -> src.inventory()
                .health(g.uuid()).filter(h -> h.eccUncorrectedErrors() >= 0)
                .ifPresent(h -> cb.call(h.eccUncorrectedErrors(), Integer.toString(g.index()), g.uuid())));
        registerXids(src.xids(), gpus, constant);
    }

    /** XID errors per GPU and XID since the daemon started (XidWatch: NVML's events), and how many GPUs report them. */
    private void registerXids(XidWatch xids, List<GpuInfo> gpus, Labels constant) {
        if (xids == null) return;
        Map<String, String> indexOf = new HashMap<>();
        for (GpuInfo g : gpus) indexOf.put(g.uuid(), Integer.toString(g.index()));
        CounterWithCallback.builder().name("vmcuda_gpu_xid_errors")
                .help("XID errors the GPU's driver reported since the daemon started (NVML events), by XID.")
                .labelNames("gpu", "uuid", "xid").constLabels(constant)
                .callback(cb -> xids.counts().forEach((uuid, byXid) -> byXid.forEach((xid, n) ->
                        cb.call(n, indexOf.getOrDefault(uuid, "unknown"), uuid, Long.toString(xid)))))
                .register(registry);
        gauge(constant, "vmcuda_gpu_xid_watched_gpus", "GPUs whose XID errors are watched (0: the driver cannot report them).",
                xids::watched);
    }

    private interface GpuValue {
        void read(GaugeWithCallback.Callback cb, GpuInfo gpu);
    }

    private void perGpu(Labels constant, String name, String help, List<GpuInfo> gpus, GpuValue value) {
        GaugeWithCallback.builder().name(name).help(help).labelNames("gpu", "uuid").constLabels(constant)
                .callback(cb -> gpus.forEach(g -> value.read(cb, g))).register(registry);
    }

    /** Per tenant that has started a session since the daemon started (ended sessions' bytes plus running ones'). */
    private void registerTenants(StatusSource src, Labels constant) {
        DaemonMetrics m = src.metrics();
        GaugeWithCallback.builder().name("vmcuda_tenant_sessions_active").help("The tenant's sessions starting or running.")
                .labelNames("tenant").constLabels(constant).callback(cb -> {
                    Map<String, Integer> active = new HashMap<>();
                    m.tenants().keySet().forEach(t -> active.put(t, 0));
                    for (Session s : src.sessions()) active.merge(s.tenant().name(), 1, Integer::sum);
                    active.forEach((t, n) -> cb.call(n, t));
                }).register(registry);
        CounterWithCallback.builder().name("vmcuda_tenant_sessions").help("Sessions the tenant started since the daemon started.")
                .labelNames("tenant").constLabels(constant)
                .callback(cb -> m.tenants().forEach((t, totals) -> cb.call(totals.sessions(), t))).register(registry);
        CounterWithCallback.builder().name("vmcuda_tenant_bytes").help("Bytes the tenant's sessions copied, by direction.")
                .labelNames("tenant", "direction").constLabels(constant).callback(cb -> {
                    Map<String, long[]> bytes = new HashMap<>();
                    m.tenants().forEach((t, totals) -> bytes.put(t, new long[] {totals.endedBytesH2d(), totals.endedBytesD2h()}));
                    for (Session s : src.sessions()) {
                        long[] b = bytes.computeIfAbsent(s.tenant().name(), k -> new long[2]);
                        b[0] = DaemonMetrics.saturatingAdd(b[0], s.bytesH2d());
                        b[1] = DaemonMetrics.saturatingAdd(b[1], s.bytesD2h());
                    }
                    bytes.forEach((t, b) -> {
                        cb.call(b[0], t, "h2d");
                        cb.call(b[1], t, "d2h");
                    });
                }).register(registry);
        registry.register(() -> callDurations(src, constant));
    }

    /**
     * vmcuda_call_duration_seconds{tenant}: how long the workers took to serve the tenant's calls (from reading a
     * CALL to its answer, so a synchronising call includes the GPU work it waits for), ended and running sessions.
     */
    private static HistogramSnapshot callDurations(StatusSource src, Labels constant) {
        Map<String, List<CallLatency>> running = new HashMap<>();
        for (Session s : src.sessions()) running.computeIfAbsent(s.tenant().name(), k -> new ArrayList<>()).add(s.callLatency());
        HistogramSnapshot.Builder h = HistogramSnapshot.builder().name("vmcuda_call_duration_seconds")
                .help("Time the workers took to serve CUDA calls, per tenant (the worker's view: without the network).");
        double[] bounds = CallLatency.upperBoundsSeconds();
        src.metrics().tenants().forEach((t, totals) -> {
            CallLatency l = totals.callLatency(running.getOrDefault(t, List.of()));
            h.dataPoint(HistogramSnapshot.HistogramDataPointSnapshot.builder()
                    .classicHistogramBuckets(ClassicHistogramBuckets.of(bounds, l.buckets()))
                    .sum(l.totalNanos() / 1e9).labels(constant.merge(Labels.of("tenant", t))).build());
        });
        return h.build();
    }

    private void registerPool(Pool pool, Labels constant) {
        gauge(constant, "vmcuda_cluster_registered",
                "1 while the appliance's registration in the pool is current, 0 while etcd cannot be reached.",
                () -> pool.registered() ? 1 : 0);
        counter(constant, "vmcuda_cluster_placements",
                "Placement questions this appliance answered with an appliance of the pool.", pool::placements);
        counter(constant, "vmcuda_cluster_placements_refused",
                "Placement questions refused (no free slot, no live appliance, etcd unreachable).", pool::placementsRefused);
        counter(constant, "vmcuda_cluster_placement_races_lost",
                "Placement transactions overtaken by another placement or a load change, then retried.",
                pool::placementRacesLost);
    }

    private void counter(Labels constant, String name, String help, java.util.function.LongSupplier value) {
        CounterWithCallback.builder().name(name).help(help).constLabels(constant)
                .callback(cb -> cb.call(value.getAsLong())).register(registry);
    }

    private void gauge(Labels constant, String name, String help, java.util.function.LongSupplier value) {
        GaugeWithCallback.builder().name(name).help(help).constLabels(constant)
                .callback(cb -> cb.call(value.getAsLong())).register(registry);
    }

    private static long sum(List<Session> sessions, ToLongFunction<Session> f) {
        long n = 0;
        for (Session s : sessions) n = DaemonMetrics.saturatingAdd(n, f.applyAsLong(s)); /* the workers' own word */
        return n;
    }

    /** The text exposition format (version 0.0.4) of every series now. */
    String render() {
        ByteArrayOutputStream out = new ByteArrayOutputStream(16 << 10);
        try {
            writer.write(out, registry.scrape(), EscapingScheme.UNDERSCORE_ESCAPING);
        } catch (IOException e) {
            throw new UncheckedIOException(e); // a ByteArrayOutputStream does not fail
        }
        return out.toString(StandardCharsets.UTF_8);
    }
}
