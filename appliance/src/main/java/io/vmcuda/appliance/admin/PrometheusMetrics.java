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
        metric(out, "vmcuda_sessions_total", "counter", "Sessions started since the daemon started.", m.sessionsTotal());
        metric(out, "vmcuda_sessions_active", "gauge", "Sessions whose worker is starting or running.", active.size());
        metric(out, "vmcuda_sessions_refused_total", "counter", "HELLOs answered with REFUSED.", m.refusedTotal());
        metric(out, "vmcuda_auth_failures_total", "counter", "HELLOs refused for a missing or wrong token.", m.authFailures());
        metric(out, "vmcuda_module_cache_hits_total", "counter",
                "Module images a worker found in the appliance's module cache (the client did not send them).", m.moduleHits());
        metric(out, "vmcuda_module_cache_misses_total", "counter",
                "Module images a worker asked the module cache for in vain (the client sends them).", m.moduleMisses());
        metric(out, "vmcuda_module_cache_bytes_saved_total", "counter",
                "Bytes of module images clients did not have to send thanks to the module cache.", m.moduleBytesSaved());
        metric(out, "vmcuda_handshakes_refused_total", "counter",
                "Connections closed at once because too many others awaited their handshake.", m.handshakesRefused());
        metric(out, "vmcuda_handshake_timeouts_total", "counter",
                "Connections closed for not completing HELLO/upload in time.", m.handshakeTimeouts());
        metric(out, "vmcuda_protocol_errors_total", "counter", "Control connections closed for a protocol error.",
                m.protocolErrors());
        metric(out, "vmcuda_bytes_h2d_total", "counter", "Bytes copied host to device, all sessions.", h2d);
        metric(out, "vmcuda_bytes_d2h_total", "counter", "Bytes copied device to host, all sessions.", d2h);
        metric(out, "vmcuda_gpus", "gauge", "GPUs in the appliance's inventory.", src.inventory().gpus().size());
        out.append("# HELP vmcuda_worker_start_seconds Time from forking a worker to its connect-back.\n")
                .append("# TYPE vmcuda_worker_start_seconds summary\n")
                .append("vmcuda_worker_start_seconds_sum ").append(m.workerStartSeconds()).append('\n')
                .append("vmcuda_worker_start_seconds_count ").append(m.workerStartCount()).append('\n');
        return out.toString();
    }

    private static void metric(StringBuilder out, String name, String type, String help, long value) {
        out.append("# HELP ").append(name).append(' ').append(help).append('\n')
                .append("# TYPE ").append(name).append(' ').append(type).append('\n')
                .append(name).append(' ').append(value).append('\n');
    }
}
