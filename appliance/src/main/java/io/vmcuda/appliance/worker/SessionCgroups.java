package io.vmcuda.appliance.worker;

import io.vmcuda.appliance.ApplianceConfig;
import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.logging.Logger;

/**
 * One cgroup per session (appliance/CONFIG.md "Session cgroups"): the kernel holds every process of a session
 * (the sandbox launcher, the worker, whatever the tenant's code starts, its UCX agent) to {@code worker.memory_max}
 * bytes of memory (tmpfs pages it writes in /dev/shm and its /tmp included), {@code worker.max_processes} tasks
 * and a CPU weight of {@code worker.cpu_weight}, so that one tenant's memory or CPU hunger starves only itself.
 * The limits live outside the tenant's process: its cgroup files are root's and read-only in its sandbox.
 *
 * <p>Where: below the daemon's own cgroup, in {@value #WORKERS}/daemon-PID/session-ID (under systemd the unit needs
 * {@code Delegate=yes}, which the packaged vmcudad.service has). On cgroup v2 the controllers must be enabled
 * for children, which the kernel allows only in a cgroup without processes: the daemon's processes move to a
 * leaf {@value #DAEMON_LEAF} first (systemd's rule for delegated units). On v1 (older or "hybrid" hosts) the
 * directory is made in the memory, pids and cpu trees. Raw cgroupfs writes, because these few files are the
 * kernel's documented interface and systemd documents them as the way a delegated service manages its subtree
 * (systemd-run --scope would need a running systemd and its D-Bus on every appliance, containers included).
 */
public final class SessionCgroups {
    private static final Logger LOG = Logger.getLogger(SessionCgroups.class.getName());
    static final String WORKERS = "vmcuda-workers";
    static final String DAEMON_LEAF = "vmcudad";
    private static final String DAEMON_PREFIX = "daemon-";
    /** memory is required; pids and cpu are used where the daemon's cgroup has them (some containers delegate memory alone). */
    private static final List<String> CONTROLLERS = List.of("memory", "pids", "cpu");

    private final boolean v2;
    private final Set<String> controllers; // of CONTROLLERS, those in use
    private final List<Path> bases;   // v2: one directory; v1: one per distinct controller tree
    private final Path memoryBase;
    private final long memoryMaxBytes;
    private final long pidsMax;
    private final int cpuWeight;

    SessionCgroups(boolean v2, Set<String> controllers, List<Path> bases, Path memoryBase, long memoryMaxBytes, long pidsMax,
                   int cpuWeight) {
        this.v2 = v2;
        this.controllers = Set.copyOf(controllers);
        this.bases = List.copyOf(bases);
        this.memoryBase = memoryBase;
        this.memoryMaxBytes = memoryMaxBytes;
        this.pidsMax = pidsMax;
        this.cpuWeight = cpuWeight;
    }

    /**
     * Decides from {@code worker.cgroup}: null when sessions run without cgroups. "auto" uses them where the
     * daemon can; where it cannot, an appliance that must keep tenants apart (tenants configured, workers
     * sandboxed) does not start unless the operator says {@code worker.cgroup = false}: limits that silently
     * are not there would be worse than none. "true" requires them.
     */
    public static SessionCgroups resolve(ApplianceConfig config, boolean tenantsApart) {
        String mode = config.workerCgroup();
        if (mode.equals("false")) {
            if (tenantsApart) LOG.warning("worker.cgroup = false: sessions have no memory, task or CPU limit of their own");
            return null;
        }
        long memoryMax = config.workerMemoryMaxBytes();
        try {
            CgroupMounts mounts = CgroupMounts.parse(Files.readString(Path.of("/proc/self/cgroup")),
                    Files.readString(Path.of("/proc/self/mountinfo")));
            SessionCgroups c = open(mounts, memoryMax, config.workerMaxProcesses(), config.workerCpuWeight());
            LOG.info("session cgroups (" + (c.v2 ? "v2" : "v1") + ") below " + c.bases + ": memory.max "
                    + (memoryMax >> 20) + " MiB" + (c.controllers.contains("pids") ? ", pids.max " + config.workerMaxProcesses() : "")
                    + (c.controllers.contains("cpu") ? ", cpu weight " + config.workerCpuWeight() : "") + " per session");
            List<String> missing = CONTROLLERS.stream().filter(x -> !c.controllers.contains(x)).toList();
            if (!missing.isEmpty()) {
                LOG.warning("the " + missing + " controller(s) are not delegated to the daemon's cgroup: sessions get no "
                        + (missing.contains("pids") ? "pids.max (RLIMIT_NPROC per session uid still holds) " : "")
                        + (missing.contains("cpu") ? "CPU weight " : "") + "of their own");
            }
            return c;
        } catch (IOException | RuntimeException e) {
            String why = "sessions cannot get cgroups of their own: " + e.getMessage();
            if (mode.equals("true") || tenantsApart) {
                throw new IllegalStateException(why + (mode.equals("true") ? " (worker.cgroup = true)"
                        : " (tenants are configured: one could take the appliance's memory or CPU from the others)")
                        + "; delegate a cgroup to vmcudad (systemd: Delegate=yes) or set worker.cgroup = false to run "
                        + "sessions without memory, task and CPU limits", e);
            }
            LOG.warning(why + "; sessions run without memory, task and CPU limits (worker.cgroup = auto)");
            return null;
        }
    }

    /**
     * Sets up {@value #WORKERS}/daemon-PID below the daemon's cgroup (one directory per daemon: two daemons
     * may share a cgroup, as a pool's test set-up does): v2 when the daemon's cgroup offers the controllers, else v1.
     */
    static SessionCgroups open(CgroupMounts mounts, long memoryMax, long pidsMax, int cpuWeight) throws IOException {
        String daemonDir = DAEMON_PREFIX + ProcessHandle.current().pid();
        String v2Problem = "no cgroup2 tree is mounted";
        if (mounts.unified() != null) {
            Path own = mounts.unified();
            // started from a process that an earlier daemon moved to its leaf (a shell beside it, a second daemon):
            // the cgroup to set up is the one above (that daemon's, set up or not: it may have lost a race with a
            // fork); nesting leaf in leaf would end where no controller is left
            if (own.getFileName() != null && own.getFileName().toString().equals(DAEMON_LEAF)) {
                own = own.getParent();
            }
            Set<String> offered = Set.of(Files.readString(own.resolve("cgroup.controllers")).trim().split("\\s+"));
            if (offered.contains("memory")) {
                Set<String> use = new LinkedHashSet<>(CONTROLLERS);
                use.retainAll(offered);
                Path workers = own.resolve(WORKERS);
                enableForChildren(own, use, true);
                Files.createDirectories(workers);
                enableForChildren(workers, use, false);
                sweep(workers, true);
                Path base = Files.createDirectories(workers.resolve(daemonDir));
                enableForChildren(base, use, false);
                return new SessionCgroups(true, use, List.of(base), base, memoryMax, pidsMax, cpuWeight);
            }
            v2Problem = "the daemon's cgroup " + own + " offers the controllers " + offered + ", not memory";
        }
        if (!mounts.v1().containsKey("memory")) throw new IOException(v2Problem + ", and no cgroup v1 tree has the memory controller");
        Set<Path> bases = new LinkedHashSet<>();
        Set<String> use = new LinkedHashSet<>();
        for (String c : CONTROLLERS) {
            Path own = mounts.v1().get(c);
            if (own == null) continue;
            use.add(c);
            Path workers = Files.createDirectories(own.resolve(WORKERS));
            if (bases.add(workers.resolve(daemonDir))) sweep(workers, false);
        }
        for (Path base : bases) Files.createDirectories(base);
        Path memoryBase = mounts.v1().get("memory").resolve(WORKERS).resolve(daemonDir);
        return new SessionCgroups(false, use, new ArrayList<>(bases), memoryBase, memoryMax, pidsMax, cpuWeight);
    }

    /**
     * cgroup v2 enables a controller for a cgroup's children only while the cgroup holds no process; when
     * {@code moveOwnProcesses}, this process and any other in {@code dir} move to {@value #DAEMON_LEAF} first.
     */
    private static void enableForChildren(Path dir, Set<String> use, boolean moveOwnProcesses) throws IOException {
        Path control = dir.resolve("cgroup.subtree_control");
        if (Set.of(Files.readString(control).trim().split("\\s+")).containsAll(use)) return;
        String enable = String.join(" ", use.stream().map(c -> "+" + c).toList());
        try {
            CgroupFiles.write(control, enable);
            return;
        } catch (IOException busy) {
            if (!moveOwnProcesses) throw busy;
        }
        Path leaf = Files.createDirectories(dir.resolve(DAEMON_LEAF));
        // a process of the cgroup may fork between the move and the write (a shell that started the daemon polls
        // it): moved again, a few times
        for (int attempt = 1; ; attempt++) {
            for (long pid : CgroupFiles.pids(dir)) {
                try {
                    CgroupFiles.write(leaf.resolve("cgroup.procs"), Long.toString(pid));
                } catch (IOException gone) {
                    if (ProcessHandle.of(pid).isPresent()) throw gone;
                }
            }
            try {
                CgroupFiles.write(control, enable);
                return;
            } catch (IOException busy) {
                if (attempt == 20) throw busy;
            }
        }
    }

    /** Kills and removes what the sessions of daemons no longer running left (a daemon killed before it cleaned up). */
    private static void sweep(Path workers, boolean v2) {
        try (DirectoryStream<Path> ds = Files.newDirectoryStream(workers, DAEMON_PREFIX + "*")) {
            for (Path daemon : ds) {
                String pid = daemon.getFileName().toString().substring(DAEMON_PREFIX.length());
                if (pid.matches("[0-9]{1,10}") && ProcessHandle.of(Long.parseLong(pid)).isPresent()) continue;
                LOG.warning("removing the session cgroups of a daemon that no longer runs: " + daemon);
                removeDaemonDir(daemon, v2);
            }
        } catch (IOException e) {
            LOG.warning("cannot look for stale session cgroups in " + workers + ": " + e);
        }
    }

    private static void removeDaemonDir(Path daemon, boolean v2) {
        try (DirectoryStream<Path> sessions = Files.newDirectoryStream(daemon, SessionCgroup.PREFIX + "*")) {
            for (Path stale : sessions) new SessionCgroup(List.of(stale), null, v2, 0).close();
            Files.deleteIfExists(daemon);
        } catch (IOException e) {
            LOG.warning("cannot remove " + daemon + ": " + e);
        }
    }

    /** At daemon shutdown, after the sessions ended: whatever is left of them goes, and the daemon's directory. */
    public void close() {
        for (Path base : bases) removeDaemonDir(base, v2);
    }

    /** The cgroup of session {@code id}, made and limited; the worker joins it (vmcuda-sandbox --cgroup). */
    public SessionCgroup create(long id) throws IOException {
        String name = SessionCgroup.PREFIX + Long.toUnsignedString(id, 16);
        List<Path> dirs = new ArrayList<>();
        Path memoryDir = memoryBase.resolve(name);
        SessionCgroup made = new SessionCgroup(dirs, memoryDir, v2, memoryMaxBytes);
        try {
            for (Path base : bases) dirs.add(Files.createDirectory(base.resolve(name)));
            if (v2) {
                CgroupFiles.write(memoryDir.resolve("memory.max"), Long.toString(memoryMaxBytes));
                // and no swap past it: the limit is one of memory, not of memory plus swap
                if (Files.exists(memoryDir.resolve("memory.swap.max"))) CgroupFiles.write(memoryDir.resolve("memory.swap.max"), "0");
                // past the limit the kernel kills the whole session, not one random process of it
                CgroupFiles.write(memoryDir.resolve("memory.oom.group"), "1");
                if (controllers.contains("pids")) CgroupFiles.write(memoryDir.resolve("pids.max"), Long.toString(pidsMax));
                if (controllers.contains("cpu")) CgroupFiles.write(memoryDir.resolve("cpu.weight"), Integer.toString(cpuWeight));
            } else {
                CgroupFiles.write(memoryDir.resolve("memory.limit_in_bytes"), Long.toString(memoryMaxBytes));
                if (Files.exists(memoryDir.resolve("memory.memsw.limit_in_bytes"))) { // memory plus swap: no swap past it
                    CgroupFiles.write(memoryDir.resolve("memory.memsw.limit_in_bytes"), Long.toString(memoryMaxBytes));
                }
                for (Path d : dirs) {
                    if (Files.exists(d.resolve("pids.max"))) CgroupFiles.write(d.resolve("pids.max"), Long.toString(pidsMax));
                    // v1 shares: 1024 is the default, as weight 100 is on v2
                    if (Files.exists(d.resolve("cpu.shares"))) {
                        CgroupFiles.write(d.resolve("cpu.shares"), Long.toString(Math.max(2, cpuWeight * 1024L / 100)));
                    }
                }
            }
            return made;
        } catch (IOException | RuntimeException e) {
            made.close();
            throw new IOException("cannot make the session's cgroup " + name + " below " + bases + ": " + e.getMessage(), e);
        }
    }
}
