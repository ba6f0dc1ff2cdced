package io.vmcuda.appliance.admin;

import io.vmcuda.appliance.session.Session;
import io.vmcuda.scheduler.GpuHealth;
import io.vmcuda.scheduler.GpuInfo;
import io.vmcuda.scheduler.GpuUsage;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.stream.Collectors;

/**
 * GET /status?format=table: the same facts as {@link StatusJson}, for people (and `vmcuda status`); and a
 * tenant's own view of the appliance for `vmcuda smi` (the GPUs, and that tenant's sessions only).
 */
public final class StatusTable {
    private StatusTable() {}

    static String render(StatusSource src) {
        return render(src, null);
    }

    /**
     * What one tenant may see (the answer to an INFO HELLO, PROTOCOL.md "Session setup"): every GPU with its load
     * and health, how many sessions each GPU holds, and only this tenant's own sessions.
     */
    public static String renderForTenant(StatusSource src, String tenant) {
        return render(src, tenant);
    }

    /** {@code tenant}: show only its sessions (and no daemon-wide counts), or null for the operator's view. */
    private static String render(StatusSource src, String tenant) {
        StringBuilder out = new StringBuilder();
        out.append("vmcudad ").append(src.version()).append('\n').append('\n');
        List<GpuInfo> gpus = src.inventory().gpus();
        if (gpus.isEmpty()) {
            out.append("GPUs: none (").append(src.inventory().unavailableReason()).append(")\n");
        } else {
            int[] perGpu = src.scheduler().activeSessionsPerGpu();
            List<String[]> rows = new ArrayList<>();
            rows.add(new String[] {"GPU", "NAME", "UUID", "CC", "MEMORY USED / TOTAL", "UTIL", "TEMP", "POWER", "SESSIONS"});
            for (GpuInfo g : gpus) {
                Optional<GpuUsage> u = src.inventory().usage(g.uuid());
                Optional<GpuHealth> h = src.inventory().health(g.uuid());
                String mem = u.map(x -> mib(x.memoryUsedBytes())).orElse("?") + " / " + mib(g.memoryTotalBytes());
                String util = u.filter(x -> x.utilizationPercent() >= 0).map(x -> x.utilizationPercent() + "%").orElse("?");
                String temp = h.filter(x -> x.temperatureCelsius() >= 0).map(x -> x.temperatureCelsius() + " C").orElse("?");
                String power = h.filter(x -> x.powerWatts() >= 0).map(x -> Math.round(x.powerWatts()) + " W").orElse("?");
                rows.add(new String[] {Integer.toString(g.index()), g.name(), g.uuid(), g.computeCapability(), mem, util, temp,
                        power, Integer.toString(perGpu[g.index()])});
            }
            table(out, rows);
        }
        out.append('\n');
        List<Session> sessions = src.sessions();
        if (tenant != null) {
            sessions = sessions.stream().filter(s -> s.tenant().name().equals(tenant)).toList();
            out.append("Your sessions (tenant ").append(tenant).append("): ").append(sessions.size()).append(" active\n");
        } else {
            out.append("Sessions: ").append(sessions.size()).append(" active, ")
                    .append(src.metrics().sessionsTotal()).append(" since start, ")
                    .append(src.scheduler().queuedRequests()).append(" queued\n");
        }
        if (!sessions.isEmpty()) {
            List<String[]> rows = new ArrayList<>();
            rows.add(new String[] {"ID", "TENANT", "PROGRAM", "STATE", "GPUS", "UP", "CALLS", "H2D", "D2H", "SETUP"});
            Instant now = Instant.now();
            for (Session s : sessions) {
                String gpuList = s.binding().gpus().isEmpty() ? "-"
                        : s.binding().gpus().stream().map(g -> Integer.toString(g.index())).collect(Collectors.joining(","));
                rows.add(new String[] {Long.toString(s.id()), s.tenant().name(), printable(s.program()),
                        s.state().name().toLowerCase(), gpuList,
                        duration(Duration.between(s.started(), now)), Long.toString(s.calls()), bytes(s.bytesH2d()),
                        bytes(s.bytesD2h()), s.timings().toString()});
            }
            table(out, rows);
        }
        return out.toString();
    }

    private static void table(StringBuilder out, List<String[]> rows) {
        int[] width = new int[rows.get(0).length];
        for (String[] r : rows) {
            for (int i = 0; i < r.length; i++) width[i] = Math.max(width[i], r[i].length());
        }
        for (String[] r : rows) {
            StringBuilder line = new StringBuilder();
            for (int i = 0; i < r.length; i++) {
                line.append(r[i]);
                if (i < r.length - 1) line.append(" ".repeat(width[i] - r[i].length() + 2));
            }
            out.append(line.toString().stripTrailing()).append('\n');
        }
    }

    /** A program name as one cell: control characters (a newline would forge a row) as '?'. */
    private static String printable(String s) {
        return s.replaceAll("\\p{Cntrl}", "?");
    }

    private static String mib(long bytes) {
        return (bytes >> 20) + " MiB";
    }

    private static String bytes(long b) {
        if (b < 1024) return b + " B";
        if (b < 1024 * 1024) return String.format("%.1f KiB", b / 1024.0);
        if (b < 1024L * 1024 * 1024) return String.format("%.1f MiB", b / (1024.0 * 1024));
        return String.format("%.2f GiB", b / (1024.0 * 1024 * 1024));
    }

    private static String duration(Duration d) {
        long s = d.getSeconds();
        return s < 60 ? s + "s" : s < 3600 ? (s / 60) + "m" + (s % 60) + "s" : (s / 3600) + "h" + (s % 3600 / 60) + "m";
    }
}
