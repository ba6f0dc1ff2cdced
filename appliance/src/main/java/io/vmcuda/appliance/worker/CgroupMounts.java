package io.vmcuda.appliance.worker;

import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Where this process's own cgroups are, read from /proc/self/cgroup and /proc/self/mountinfo: the directory of
 * its cgroup in the unified (v2) hierarchy, and in the v1 hierarchy of each controller. A host has v2 only
 * (current distributions), v1 only, or both ("hybrid": v1 controllers plus a unified tree that may hold none).
 *
 * @param unified the process's cgroup directory in a mounted cgroup2 tree, or null
 * @param v1      controller name (memory, pids, cpu...) to the process's cgroup directory in that controller's
 *                mounted v1 tree
 */
public record CgroupMounts(Path unified, Map<String, Path> v1) {

    static CgroupMounts parse(String procSelfCgroup, String mountinfo) {
        Map<String, String> ownPaths = new LinkedHashMap<>(); // "" = unified; else a v1 controller
        for (String line : procSelfCgroup.split("\n")) {
            String[] f = line.split(":", 3); // hierarchy-ID:controller-list:path
            if (f.length != 3 || !f[2].startsWith("/")) continue;
            if (f[0].equals("0") && f[1].isEmpty()) {
                ownPaths.put("", f[2]);
            } else {
                for (String c : f[1].split(",")) if (!c.isEmpty()) ownPaths.put(c, f[2]);
            }
        }
        Path unified = null;
        Map<String, Path> v1 = new LinkedHashMap<>();
        for (String line : mountinfo.split("\n")) {
            Mount m = Mount.parse(line);
            if (m == null) continue;
            if (m.fsType.equals("cgroup2") && unified == null && ownPaths.containsKey("")) {
                unified = m.dirOf(ownPaths.get(""));
            } else if (m.fsType.equals("cgroup")) {
                for (String c : m.superOptions.split(",")) {
                    if (ownPaths.containsKey(c) && !c.isEmpty() && !v1.containsKey(c)) {
                        Path dir = m.dirOf(ownPaths.get(c));
                        if (dir != null) v1.put(c, dir);
                    }
                }
            }
        }
        return new CgroupMounts(unified, Map.copyOf(v1));
    }

    /**
     * The tightest memory limit on this process's cgroup and its ancestors (v2 memory.max, else v1
     * memory.limit_in_bytes), or empty when none is set or readable: what a container or a systemd slice allows it.
     */
    java.util.OptionalLong memoryLimit() {
        Path dir = unified != null && java.nio.file.Files.exists(unified.resolve("memory.max")) ? unified : v1.get("memory");
        String file = dir == unified ? "memory.max" : "memory.limit_in_bytes";
        long limit = Long.MAX_VALUE;
        for (Path d = dir; d != null && java.nio.file.Files.isReadable(d.resolve(file)); d = d.getParent()) {
            try {
                String v = java.nio.file.Files.readString(d.resolve(file)).strip();
                if (v.matches("[0-9]{1,19}")) limit = Math.min(limit, Long.parseLong(v)); // "max": none here
            } catch (java.io.IOException | NumberFormatException e) {
                break;
            }
        }
        // v1 writes "no limit" as a huge number just below 2^63
        return limit >= (1L << 62) ? java.util.OptionalLong.empty() : java.util.OptionalLong.of(limit);
    }

    /** This process's {@link #memoryLimit}, read from /proc/self; empty when there is none or it cannot be read. */
    public static java.util.OptionalLong ofThisProcessMemoryLimit() {
        try {
            return parse(java.nio.file.Files.readString(Path.of("/proc/self/cgroup")),
                    java.nio.file.Files.readString(Path.of("/proc/self/mountinfo"))).memoryLimit();
        } catch (java.io.IOException | RuntimeException e) {
            return java.util.OptionalLong.empty();
        }
    }

    /** One line of mountinfo: ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPEROPTIONS. */
    private record Mount(String root, String mountPoint, String fsType, String superOptions) {
        static Mount parse(String line) {
            List<String> f = List.of(line.trim().split(" "));
            int dash = f.indexOf("-");
            if (dash < 6 || f.size() < dash + 4) return null;
            return new Mount(MountInfo.unescape(f.get(3)), MountInfo.unescape(f.get(4)), f.get(dash + 1), f.get(dash + 3));
        }

        /** The directory of cgroup {@code path} in this mount; null when the mount shows another part of the tree. */
        Path dirOf(String path) {
            if (root.equals("/")) return Path.of(mountPoint + path);
            if (path.equals(root)) return Path.of(mountPoint);
            if (path.startsWith(root + "/")) return Path.of(mountPoint + path.substring(root.length()));
            return null;
        }

    }
}
