package io.vmcuda.appliance.admin;

import io.vmcuda.appliance.JsonWriter;
import io.vmcuda.appliance.session.Session;
import io.vmcuda.appliance.session.SessionJson;
import io.vmcuda.scheduler.GpuInfo;
import io.vmcuda.scheduler.GpuUsage;
import java.util.List;
import java.util.Optional;

/** GET /status: the GPUs and the active sessions as JSON. */
final class StatusJson {
    private StatusJson() {}

    static String render(StatusSource src) {
        JsonWriter w = new JsonWriter().beginObject().field("version", src.version());
        String why = src.inventory().unavailableReason();
        w.name("gpu_unavailable_reason").value(why);
        int[] perGpu = src.scheduler().activeSessionsPerGpu();
        w.name("gpus").beginArray();
        for (GpuInfo g : src.inventory().gpus()) {
            w.beginObject()
                    .field("index", g.index())
                    .field("name", g.name())
                    .field("uuid", g.uuid())
                    .field("compute_capability", g.computeCapability())
                    .field("memory_total_bytes", g.memoryTotalBytes());
            Optional<GpuUsage> u = src.inventory().usage(g.uuid());
            if (u.isPresent()) {
                w.field("memory_used_bytes", u.get().memoryUsedBytes());
                if (u.get().utilizationPercent() >= 0) w.field("utilization_percent", u.get().utilizationPercent());
            }
            w.field("sessions", perGpu[g.index()]).endObject();
        }
        w.endArray();
        List<Session> sessions = src.sessions();
        w.name("sessions").beginArray();
        for (Session s : sessions) {
            w.beginObject()
                    .field("id", s.id())
                    .field("program", s.program())
                    .field("tenant", s.tenant().name())
                    .field("sha256", s.sha256())
                    .field("state", s.state().name().toLowerCase())
                    .name("gpus").beginArray();
            for (GpuInfo g : s.binding().gpus()) w.value(g.index());
            w.endArray()
                    .field("started", s.started().toString())
                    .field("bytes_h2d", s.bytesH2d())
                    .field("bytes_d2h", s.bytesD2h())
                    .field("calls", s.calls())
                    .field("connections", s.connectionsHandedOver());
            SessionJson.setup(w, s.timings());
            w.endObject();
        }
        w.endArray()
                .field("sessions_active", sessions.size())
                .field("sessions_total", src.metrics().sessionsTotal())
                .field("sessions_queued", src.scheduler().queuedRequests());
        return w.endObject().toString();
    }
}
