package io.vmcuda.appliance.admin;

import io.vmcuda.appliance.session.DaemonMetrics;
import io.vmcuda.appliance.session.Session;
import java.util.List;

/** GET /metrics in the Prometheus text exposition format (version 0.0.4). */
final class PrometheusMetrics {
    private PrometheusMetrics() {}

    static String render(StatusSource src) {
        DaemonMetrics m = src.metrics();
        List<Session> active = src.sessions();
        long h2d = m.endedBytesH2d();
        long d2h = m.endedBytesD2h();
        for (Session s : active) {
            h2d += s.bytesH2d();
            d2h += s.bytesD2h();
        }
        StringBuilder out = new StringBuilder(1024);
        // in a pool every series names its pool and appliance, so one Prometheus scrapes them all apart
        io.vmcuda.appliance.pool.Pool pool = src.pool();
        String labels = pool == null ? "" : "{cluster=\"" + escape(pool.settings().prefix()) + "\",appliance=\""
                + escape(pool.settings().name()) + "\"}";
        metric(out, labels, "vmcuda_sessions_total", "counter", "Sessions started since the daemon started.", m.sessionsTotal());
        metric(out, labels, "vmcuda_sessions_active", "gauge", "Sessions whose worker is starting or running.", active.size());
        metric(out, labels, "vmcuda_sessions_refused_total", "counter", "HELLOs answered with REFUSED.", m.refusedTotal());
        metric(out, labels, "vmcuda_auth_failures_total", "counter", "HELLOs refused for a missing or wrong token.", m.authFailures());
        metric(out, labels, "vmcuda_module_cache_hits_total", "counter",
                "Module images a worker found in the appliance's module cache (the client did not send them).", m.moduleHits());
        metric(out, labels, "vmcuda_module_cache_misses_total", "counter",
                "Module images a worker asked the module cache for in vain (the client sends them).", m.moduleMisses());
        metric(out, labels, "vmcuda_module_cache_bytes_saved_total", "counter",
                "Bytes of module images clients did not have to send thanks to the module cache.", m.moduleBytesSaved());
        metric(out, labels, "vmcuda_handshakes_refused_total", "counter",
                "Connections closed at once because too many others awaited their handshake.", m.handshakesRefused());
        metric(out, labels, "vmcuda_handshake_timeouts_total", "counter",
                "Connections closed for not completing HELLO/upload in time.", m.handshakeTimeouts());
        metric(out, labels, "vmcuda_protocol_errors_total", "counter", "Control connections closed for a protocol error.",
                m.protocolErrors());
        metric(out, labels, "vmcuda_sessions_killed_over_quota_total", "counter",
                "Sessions killed because their worker used more GPU memory than the tenant's quota (driver's count).",
                m.quotaKills());
        metric(out, labels, "vmcuda_bytes_h2d_total", "counter", "Bytes copied host to device, all sessions.", h2d);
        metric(out, labels, "vmcuda_bytes_d2h_total", "counter", "Bytes copied device to host, all sessions.", d2h);
        metric(out, labels, "vmcuda_gpus", "gauge", "GPUs in the appliance's inventory.", src.inventory().gpus().size());
        out.append("# HELP vmcuda_worker_start_seconds Time from forking a worker to its connect-back.\n")
                .append("# TYPE vmcuda_worker_start_seconds summary\n")
                .append("vmcuda_worker_start_seconds_sum").append(labels).append(' ').append(m.workerStartSeconds()).append('\n')
                .append("vmcuda_worker_start_seconds_count").append(labels).append(' ').append(m.workerStartCount()).append('\n');
        if (pool != null) {
            metric(out, labels, "vmcuda_cluster_registered", "gauge",
                    "1 while the appliance's registration in the pool is current, 0 while etcd cannot be reached.",
                    pool.registered() ? 1 : 0);
            metric(out, labels, "vmcuda_cluster_placements_total", "counter",
                    "Placement questions this appliance answered with an appliance of the pool.", pool.placements());
            metric(out, labels, "vmcuda_cluster_placements_refused_total", "counter",
                    "Placement questions refused (no free slot, no live appliance, etcd unreachable).",
                    pool.placementsRefused());
            metric(out, labels, "vmcuda_cluster_placement_races_lost_total", "counter",
                    "Placement transactions overtaken by another placement or a load change, then retried.",
                    pool.placementRacesLost());
        }
        return out.toString();
    }

    private static void metric(StringBuilder out, String labels, String name, String type, String help, long value) {
        out.append("# HELP ").append(name).append(' ').append(help).append('\n')
                .append("# TYPE ").append(name).append(' ').append(type).append('\n')
                .append(name).append(labels).append(' ').append(value).append('\n');
    }

    /** A label value in the exposition format. */
    private static String escape(String v) {
        return v.replace("\\", "\\\\").replace("\"", "\\\"").replace("\n", "\\n");
    }
}
