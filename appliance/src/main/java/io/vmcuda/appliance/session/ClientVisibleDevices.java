package io.vmcuda.appliance.session;

import io.vmcuda.scheduler.GpuInfo;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Collectors;

/**
 * The client's CUDA_VISIBLE_DEVICES, applied within the GPUs bound to its session: to the program, the
 * session's GPUs are the machine's, numbered 0..k-1 in the order the scheduler bound them, so the client's
 * list selects and orders among those exactly as CUDA selects among a machine's GPUs. The worker gets the
 * result as UUIDs (a worker never sees a GPU outside its binding, whatever the client asks).
 *
 * <p>As NVIDIA's driver does, entries are read up to the first one that names no device: an index past the
 * bound GPUs, a UUID (or the leading part of one, as CUDA allows) that matches none or more than one of them,
 * or anything else. An empty list hides every GPU.
 */
final class ClientVisibleDevices {
    private ClientVisibleDevices() {}

    /** The worker's CUDA_VISIBLE_DEVICES for a session bound to {@code bound}, given the client's value (or null). */
    static String workerValue(List<GpuInfo> bound, String clientValue) {
        if (clientValue == null) return join(bound);
        List<GpuInfo> chosen = new ArrayList<>();
        for (String raw : clientValue.split(",", -1)) {
            GpuInfo g = named(bound, raw.trim());
            if (g == null) break;
            chosen.add(g);
        }
        return join(chosen);
    }

    private static GpuInfo named(List<GpuInfo> bound, String entry) {
        if (entry.matches("[0-9]{1,9}")) {
            int i = Integer.parseInt(entry);
            return i < bound.size() ? bound.get(i) : null;
        }
        if (!entry.regionMatches(true, 0, "GPU-", 0, 4) || entry.length() <= 4) return null;
        List<GpuInfo> matches = bound.stream()
                .filter(g -> g.uuid() != null && g.uuid().regionMatches(true, 0, entry, 0, entry.length())).toList();
        return matches.size() == 1 ? matches.get(0) : null;
    }

    private static String join(List<GpuInfo> gpus) {
        return gpus.stream().map(GpuInfo::uuid).collect(Collectors.joining(","));
    }
}
