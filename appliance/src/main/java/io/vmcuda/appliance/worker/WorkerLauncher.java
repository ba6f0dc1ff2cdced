package io.vmcuda.appliance.worker;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Starts a rewritten binary as a session's worker process, with the environment PROTOCOL.md specifies.
 * The environment is built from scratch (plus a few harmless variables of the daemon) so that nothing of
 * the daemon's own setup, such as a CUDA_VISIBLE_DEVICES, leaks into a worker.
 */
public final class WorkerLauncher {
    /** Daemon variables a worker may need (CUDA's JIT cache lives under HOME; PATH for popen'd tools). */
    /** Passed through from the daemon; VMCUDA_POLL_US: how long a worker polls its sockets before it blocks (vmc_io.c). */
    private static final List<String> INHERITED = List.of("PATH", "HOME", "LANG", "LC_ALL", "TZ", "TMPDIR", "VMCUDA_POLL_US");
    private static final Path BASH = Path.of("/bin/bash");
    /** The worker for sessions that ship no executable, next to libvmcuda-worker.so. */
    public static final String PLAIN_WORKER = "vmcuda-worker";
    /** The session directory's folder of the libraries only the client had, last on the worker's LD_LIBRARY_PATH. */
    static final String CLIENT_LIBRARIES = "client-libraries";
    /** The worker's log, in its session's directory. */
    public static final String WORKER_LOG = "worker.log";

    private final Path workerSocket;
    private final Path workerLibDir;
    private final List<String> cudaLibDirs;
    private final long blockSize;
    private final Map<String, String> extraEnv;
    private final Sandbox sandbox;
    private final String idleReleaseMinutes;
    private volatile boolean cudaIpc;
    private final List<Path> shmRegions;
    private final UidPool uids;     // null: sandboxed workers all run as worker.user
    private final Path hiddenDir;   // the daemon's state directory, out of a sandboxed worker's sight; or null
    private volatile Path ucxAgent; // vmcuda-ucx-agent when the appliance offers UCX (worker.ucx), else null
    private volatile SessionCgroups cgroups; // per-session limits (worker.cgroup), or null
    private volatile SessionDisks disks; // each session's directory a tmpfs of its own (worker.disk_max), or null

    public WorkerLauncher(Path workerSocket, Path workerLibDir, List<String> cudaLibDirs, long blockSize,
                          Map<String, String> extraEnv) {
        this(workerSocket, workerLibDir, cudaLibDirs, blockSize, extraEnv, null, "0");
    }

    /**
     * @param sandbox            null to run workers unsandboxed
     * @param idleReleaseMinutes {@code session.idle_release_minutes} as configured, "0" = off
     */
    public WorkerLauncher(Path workerSocket, Path workerLibDir, List<String> cudaLibDirs, long blockSize,
                          Map<String, String> extraEnv, Sandbox sandbox, String idleReleaseMinutes) {
        this(workerSocket, workerLibDir, cudaLibDirs, blockSize, extraEnv, sandbox, idleReleaseMinutes, List.of());
    }

    /**
     * @param sandbox            null to run workers unsandboxed
     * @param idleReleaseMinutes {@code session.idle_release_minutes} as configured, "0" = off
     * @param shmRegions         {@code shm.regions}: shared-memory regions every worker may map (VMCUDA_SHM_REGIONS;
     *                           a sandboxed worker gets them already open from the launcher, --region)
     */
    public WorkerLauncher(Path workerSocket, Path workerLibDir, List<String> cudaLibDirs, long blockSize,
                          Map<String, String> extraEnv, Sandbox sandbox, String idleReleaseMinutes,
                          List<Path> shmRegions) {
        this(workerSocket, workerLibDir, cudaLibDirs, blockSize, extraEnv, sandbox, idleReleaseMinutes, shmRegions,
                null, null);
    }

    /**
     * @param uids      worker.uid_range: a sandboxed worker runs as a uid of its own (null: as worker.user)
     * @param hiddenDir a directory above every session directory that sandboxed workers must not see (the
     *                  daemon's state: other sessions, the binary cache, the records), or null
     */
    public WorkerLauncher(Path workerSocket, Path workerLibDir, List<String> cudaLibDirs, long blockSize,
                          Map<String, String> extraEnv, Sandbox sandbox, String idleReleaseMinutes,
                          List<Path> shmRegions, UidPool uids, Path hiddenDir) {
        this.uids = sandbox == null ? null : uids;
        this.hiddenDir = sandbox == null ? null : hiddenDir;
        this.shmRegions = List.copyOf(shmRegions);
        this.sandbox = sandbox;
        this.idleReleaseMinutes = idleReleaseMinutes;
        this.workerSocket = workerSocket;
        this.workerLibDir = workerLibDir;
        this.cudaLibDirs = List.copyOf(cudaLibDirs);
        this.blockSize = blockSize;
        this.extraEnv = Map.copyOf(extraEnv);
    }

    public Path workerLibDir() {
        return workerLibDir;
    }

    /**
     * What one worker needs to know; {@code cudaVisibleDevices} is null to leave the variable unset;
     * {@code uid} is the session's own uid from {@link #allocateUid()}, 0 for none;
     * {@code cgroup} the session's from {@link #createCgroup}, or null; {@code libraries} the shared libraries only
     * the client had (file name the loader asks for → the shipped file in the module cache).
     */
    public record WorkerSpec(long sessionId, String keyHex, String cudaVisibleDevices, String argv0,
                             Path executable, Path workDir, Path logFile, long memoryQuotaBytes, long uid,
                             List<Path> tenantRegions, Path lendDir, SessionCgroup cgroup, Map<String, Path> libraries) {
        public WorkerSpec(long sessionId, String keyHex, String cudaVisibleDevices, String argv0, Path executable,
                          Path workDir, Path logFile) {
            this(sessionId, keyHex, cudaVisibleDevices, argv0, executable, workDir, logFile, 0, 0, List.of(), null, null,
                    Map.of());
        }

        /**
         * Where the worker finds the libraries only its client had (linked there by {@link #start}), or null: in what
         * the daemon lends the session (root's, read-only to the worker, on the module cache's file system: hard
         * links), else in the session's directory (copies where that is a tmpfs of its own).
         */
        Path libraryDir() {
            return libraries.isEmpty() ? null : (lendDir != null ? lendDir : workDir).resolve(CLIENT_LIBRARIES);
        }

        List<Path> cgroupDirs() {
            return cgroup == null ? List.of() : cgroup.dirs();
        }
    }

    /** The regions this worker gets: the appliance-wide shm.regions, then its tenant's own (never another's). */
    List<Path> regions(WorkerSpec spec) {
        List<Path> all = new ArrayList<>(shmRegions);
        for (Path r : spec.tenantRegions()) if (!all.contains(r)) all.add(r);
        return all;
    }

    /**
     * A uid for the next session's worker: 0 when workers share worker.user (unsandboxed, or no
     * worker.uid_range); throws when the range is exhausted.
     */
    public long allocateUid() {
        if (uids == null) return 0;
        long uid = uids.allocate();
        if (uid < 0) {
            throw new IllegalStateException("every uid of worker.uid_range is in use by a running session ("
                    + uids.inUse() + "); widen the range");
        }
        return uid;
    }

    /**
     * After a session's worker and every process of it are gone ({@link UidReclaim}): its directory goes back
     * to root and what the uid left in /dev/shm is deleted, so that the uid, when handed out again, owns
     * nothing of this session; then the uid is released. When that fails the uid stays out of circulation.
     */
    public void releaseUid(long uid, Path workDir) {
        if (uid <= 0 || uids == null) return;
        try {
            UidReclaim reclaim = new UidReclaim();
            reclaim.reclaim(workDir);
            reclaim.sweepShm(uid);
        } catch (IOException | RuntimeException e) {
            java.util.logging.Logger.getLogger(WorkerLauncher.class.getName()).warning("uid " + uid
                    + " stays reserved: cannot take back what it owned (" + workDir + ", /dev/shm): " + e);
            return;
        }
        uids.release(uid);
    }

    /**
     * At the daemon's start, before any session: what the uids of worker.uid_range left in /dev/shm under an
     * earlier daemon (one killed before it could take it back) is deleted, so that a uid handed out again owns
     * nothing of another tenant's session; a uid that still runs a process stays out of circulation.
     */
    public void reclaimUidsAtStart() {
        if (uids == null) return;
        java.util.logging.Logger log = java.util.logging.Logger.getLogger(WorkerLauncher.class.getName());
        for (long busy : UidReclaim.uidsWithProcesses(uids::contains)) {
            uids.reserve(busy);
            log.warning("uid " + busy + " of worker.uid_range stays reserved: a process of it runs outside any session "
                    + "of this daemon");
        }
        try {
            new UidReclaim().sweepShm(uids::contains);
        } catch (IOException | RuntimeException e) {
            throw new IllegalStateException("cannot delete what the uids of worker.uid_range " + uids.describe()
                    + " left in /dev/shm: " + e, e);
        }
    }

    public boolean sandboxed() {
        return sandbox != null;
    }

    public Process start(WorkerSpec spec) throws IOException {
        Files.createDirectories(spec.workDir());
        linkLibraries(spec);
        ProcessBuilder pb = new ProcessBuilder(command(spec))
                .directory(spec.workDir().toFile())
                .redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.appendTo(spec.logFile().toFile()))
                .redirectInput(ProcessBuilder.Redirect.from(Path.of("/dev/null").toFile()));
        Map<String, String> env = pb.environment();
        env.clear();
        env.putAll(environment(spec, System.getenv()));
        return pb.start();
    }

    /**
     * The client's libraries, each under the name the loader asks for, as hard links to the module cache's files
     * (root's, mode 0644: the worker reads them and cannot change them; an eviction leaves the session its copy),
     * or copies where a link is not possible.
     */
    private static void linkLibraries(WorkerSpec spec) throws IOException {
        Path dir = spec.libraryDir();
        if (dir == null) return;
        Files.createDirectories(dir);
        Files.setPosixFilePermissions(dir, java.nio.file.attribute.PosixFilePermissions.fromString("rwxr-xr-x"));
        for (Map.Entry<String, Path> lib : spec.libraries().entrySet()) {
            Path link = dir.resolve(lib.getKey());
            if (!link.getParent().equals(dir)) throw new IOException("library name " + lib.getKey() + " is not a file name");
            try {
                Files.createLink(link, lib.getValue());
            } catch (IOException | UnsupportedOperationException e) {
                Files.copy(lib.getValue(), link);
                // readable by the session's uid whatever the daemon's umask (the unit's UMask=0027)
                Files.setPosixFilePermissions(link, java.nio.file.attribute.PosixFilePermissions.fromString("rw-r--r--"));
            }
        }
    }

    /** The directories on every worker's LD_LIBRARY_PATH: the worker library's, then the CUDA libraries'. */
    public List<Path> libraryPath() {
        List<Path> dirs = new ArrayList<>(List.of(workerLibDir));
        for (String d : cudaLibDirs) dirs.add(Path.of(d));
        return dirs;
    }

    /** Puts each worker started from now on into a cgroup of its session's own (worker.cgroup). */
    public void useCgroups(SessionCgroups cgroups) {
        this.cgroups = cgroups;
    }

    /** Whether workers started from now on serve CUDA IPC (worker.cuda_ipc; worker_ipc.c says why it is a choice). */
    public void allowCudaIpc(boolean allowed) {
        this.cudaIpc = allowed;
    }

    /** Makes each session's directory from now on a tmpfs of its own (worker.disk_max; null: none). */
    public void useDisks(SessionDisks disks) {
        this.disks = disks;
    }

    /** Makes a new session's directory its own bounded tmpfs; false where sessions get none. */
    public boolean mountDisk(Path dir) throws IOException {
        SessionDisks d = disks;
        if (d == null) return false;
        d.mount(dir);
        return true;
    }

    /** At the daemon's stop: every session directory still mounted goes, its log kept. */
    public void releaseDisks() {
        SessionDisks d = disks;
        if (d != null) d.releaseAll(dir -> dir.resolve(WORKER_LOG));
    }

    /** At a session's end: its directory's tmpfs goes, its log stays (SessionDisks.release). */
    public void releaseDisk(Path dir, Path log) {
        SessionDisks d = disks;
        if (d != null) d.release(dir, log);
    }

    /** The id whose cgroup the UCX agent's start-up check runs in (UcxAgent.probe); sessions' ids are never 0. */
    static final long PROBE_CGROUP_ID = 0;

    /** The cgroup for session {@code id}'s worker, made and limited; null when sessions get none. */
    public SessionCgroup createCgroup(long id) throws IOException {
        SessionCgroups c = cgroups;
        return c == null ? null : c.create(id);
    }

    /** At daemon shutdown, after every session ended: the session cgroups' directory goes. */
    public void closeCgroups() {
        SessionCgroups c = cgroups;
        if (c != null) c.close();
    }

    /** Offers bulk copies over UCX to the workers started from now on, through this agent (UcxAgent). */
    public void offerUcx(Path agent) {
        this.ucxAgent = agent;
    }

    /** The worker's command line: through the sandbox launcher when workers are sandboxed. */
    List<String> command(WorkerSpec spec) {
        if (sandbox == null) return command(spec.argv0(), spec.executable(), spec.cgroupDirs());
        return sandbox.command(spec.workDir(), keep(), regions(spec), spec.executable(), spec.argv0(), spec.uid(), hiddenDir,
                spec.lendDir(), ucxAgent, spec.cgroupDirs());
    }

    /** What must stay visible inside the sandbox, the worker's and its agent's (re-bound when below the private /tmp). */
    private List<Path> keep() {
        List<Path> keep = new ArrayList<>();
        keep.add(workerLibDir);
        for (String d : cudaLibDirs) {
            if (Files.isDirectory(Path.of(d))) keep.add(Path.of(d));
        }
        return keep;
    }

    /**
     * The start-up check of {@code agent} (UcxAgent.probe): with workers sandboxed, vmcuda-sandbox builds the
     * confinement a session's agent gets (the same --keep and --hide as {@link #command}) and runs the agent's
     * --self-test in it, as {@code uid} ({@link #allocateUid}, given back by {@link #releaseProbeUid}) and in the cgroup {@code cgroupDirs} (one made as
     * a session's, {@link #createCgroup}; empty for none); unsandboxed, the agent's --probe, as an unsandboxed worker
     * would start it.
     */
    List<String> ucxAgentProbeCommand(Path agent, long uid, List<Path> cgroupDirs) {
        if (sandbox == null) return List.of(agent.toString(), "--probe");
        return sandbox.agentProbeCommand(agent, keep(), hiddenDir, uid, cgroupDirs);
    }

    /**
     * Gives back the check's uid at once: its agent wrote only in the tmpfs mounts of its own namespace (its /tmp
     * and /dev/shm), so the uid owns nothing on the host that a session's reclaim would have to remove.
     */
    void releaseProbeUid(long uid) {
        if (uid > 0 && uids != null) uids.release(uid);
    }

    /**
     * The environment of that check: what of a worker's environment reaches its agent (which inherits it through
     * the launcher, or from the worker): the daemon's harmless variables, the library path, UCX's settings, worker.env.
     */
    Map<String, String> ucxAgentProbeEnvironment(Map<String, String> daemonEnv) {
        Map<String, String> env = new LinkedHashMap<>();
        inherit(daemonEnv, env);
        env.put("LD_LIBRARY_PATH", libraryPath(null));
        ucxSettings(daemonEnv, env);
        env.putAll(extraEnv);
        return env;
    }

    /**
     * argv[0] must be the client's program name (some programs and libraries read it), but Java cannot
     * set it apart from the executable path; bash's {@code exec -a} can, and the exec keeps the PID, so
     * the Process handle still is the worker itself. Before the exec bash moves itself into the session's
     * cgroups, so that nothing of the program runs outside them.
     */
    static List<String> command(String argv0, Path executable, List<Path> cgroupDirs) {
        if (!Files.isExecutable(BASH)) {
            if (!cgroupDirs.isEmpty()) throw new IllegalStateException(BASH + " is needed to start a worker in its cgroup");
            return List.of(executable.toString());
        }
        List<String> cmd = new ArrayList<>(List.of(BASH.toString(), "-c",
                "for d in \"${@:2}\"; do echo $$ > \"$d/cgroup.procs\" || exit 125; done; exec -a \"$0\" \"$1\"", argv0,
                executable.toString()));
        for (Path d : cgroupDirs) cmd.add(d.toString());
        return cmd;
    }

    Map<String, String> environment(WorkerSpec spec, Map<String, String> daemonEnv) {
        Map<String, String> env = new LinkedHashMap<>();
        inherit(daemonEnv, env);
        env.put("VMCUDA_WORKER_SOCKET", workerSocket.toString());
        env.put("VMCUDA_SESSION_ID", Long.toString(spec.sessionId()));
        env.put("VMCUDA_WORKER_KEY", spec.keyHex());
        if (spec.cudaVisibleDevices() != null) env.put("CUDA_VISIBLE_DEVICES", spec.cudaVisibleDevices());
        env.put("VMCUDA_BLOCK_SIZE", Long.toString(blockSize));
        env.put("LD_LIBRARY_PATH", libraryPath(spec.libraryDir()));
        if (spec.memoryQuotaBytes() > 0) env.put("VMCUDA_MEMORY_QUOTA", Long.toString(spec.memoryQuotaBytes()));
        if (!"0".equals(idleReleaseMinutes)) env.put("VMCUDA_IDLE_RELEASE_MINUTES", idleReleaseMinutes);
        env.put("VMCUDA_CUDA_IPC", cudaIpc ? "1" : "0");
        // the uids of the workers' sessions, whose workers alone may ask this one for an export (worker_shareable.c)
        if (uids != null) env.put("VMCUDA_WORKER_UIDS", uids.describe());
        // where the daemon lends cached module images (PROTOCOL.md "Worker ↔ daemon"); unset: no module cache
        if (spec.lendDir() != null) env.put("VMCUDA_MODULE_LEND_DIR", spec.lendDir().toAbsolutePath().toString());
        List<Path> regions = regions(spec);
        if (!regions.isEmpty()) {
            List<String> paths = new ArrayList<>();
            for (Path r : regions) paths.add(r.toString());
            env.put("VMCUDA_SHM_REGIONS", String.join(",", paths));
        }
        Path agent = ucxAgent;
        if (agent != null) {
            // a sandboxed worker gets its agent from the launcher (--ucx-agent); UCX's own settings reach the agent
            if (sandbox == null) env.put("VMCUDA_UCX_AGENT", agent.toString());
            ucxSettings(daemonEnv, env);
        }
        env.putAll(extraEnv);
        return env;
    }

    private static void inherit(Map<String, String> daemonEnv, Map<String, String> env) {
        for (String name : INHERITED) {
            String v = daemonEnv.get(name);
            if (v != null) env.put(name, v);
        }
    }

    /** {@link #libraryPath()} as LD_LIBRARY_PATH, with {@code clientLibraries} last when not null. */
    private String libraryPath(Path clientLibraries) {
        List<String> libPath = new ArrayList<>();
        for (Path d : libraryPath()) libPath.add(d.toString());
        if (clientLibraries != null) libPath.add(clientLibraries.toAbsolutePath().toString());
        return String.join(":", libPath);
    }

    private static void ucxSettings(Map<String, String> daemonEnv, Map<String, String> env) {
        env.put("UCX_LOG_FILE", "stderr"); // the session log, not the worker's stdout (which reaches the client)
        daemonEnv.forEach((name, value) -> {
            if (name.startsWith("UCX_")) env.put(name, value);
        });
    }
}
