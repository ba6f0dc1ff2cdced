package io.vmcuda.appliance.session;

import io.netty.channel.Channel;
import io.vmcuda.scheduler.GpuBinding;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * One client program's session: its worker process, its GPUs, its counters and its life cycle
 * STARTING (worker forked, not yet connected) → ACTIVE (connected; client connections handed over) →
 * ENDED (worker exited 0) or ABORTED (non-zero exit, killed, or never connected).
 * Mutable state is guarded by the object's monitor; {@link SessionManager} drives the transitions.
 */
public final class Session {
    public enum State { STARTING, ACTIVE, ENDED, ABORTED }

    private final long id;
    private final byte[] key;
    private final String program;
    private final String sha256;
    private final GpuBinding binding;
    private final Path dir;
    private final Instant started = Instant.now();
    private final SetupTimings timings;
    private final io.vmcuda.appliance.auth.Tenant tenant;
    final long launchNanos = System.nanoTime();

    // guarded by this
    State state = State.STARTING;
    Process process;
    Channel worker;
    Channel newConnection;
    final List<Channel> waitingForWorker = new ArrayList<>();
    /** Hand-offs run one after another so the NEW connection reaches the worker first. */
    CompletableFuture<Void> handoffTail = CompletableFuture.completedFuture(null);
    String abortReason;
    /** ABORT lines its worker sent (SessionManager logs the first few: the worker runs the tenant's code). */
    int workerReports;
    /** The client connections handed (or being handed) to the worker: their tenant's count frees them at the end. */
    final List<ConnectionSlot> connectionSlots = new ArrayList<>();
    /** The worker's own uid (worker.uid_range), 0 when it runs as worker.user or unsandboxed. */
    volatile long uid;
    /** Where the daemon lends this session cached module images (SessionModules), or null. */
    volatile Path lendDir;
    /** The session's cgroup (worker.cgroup: memory, task and CPU limits), or null. */
    volatile io.vmcuda.appliance.worker.SessionCgroup cgroup;
    /** Its directory is a tmpfs of its own (SessionDisks), to unmount at its end. */
    volatile boolean diskMounted;
    /** A MODULE? of this session's worker awaits its answer (one at a time). */
    final java.util.concurrent.atomic.AtomicBoolean moduleQueryPending = new java.util.concurrent.atomic.AtomicBoolean();

    private volatile Instant ended;
    private volatile long bytesH2d;
    private volatile long bytesD2h;
    private volatile long calls;
    private volatile CallLatency callLatency = CallLatency.NONE;
    private volatile Integer exitStatus;
    private volatile Integer byeStatus;
    private volatile Integer programExitStatus;
    private volatile int connectionsHandedOver;

    Session(long id, byte[] key, String program, String sha256, GpuBinding binding, Path dir, SetupTimings timings,
            io.vmcuda.appliance.auth.Tenant tenant) {
        this.tenant = tenant;
        this.id = id;
        this.key = key.clone();
        this.program = program;
        this.sha256 = sha256;
        this.binding = binding;
        this.dir = dir;
        this.timings = timings;
    }

    public long id() {
        return id;
    }

    byte[] key() {
        return key.clone();
    }

    String keyHex() {
        return HexFormat.of().formatHex(key);
    }

    public io.vmcuda.appliance.auth.Tenant tenant() {
        return tenant;
    }

    public String program() {
        return program;
    }

    public String sha256() {
        return sha256;
    }

    public GpuBinding binding() {
        return binding;
    }

    public Path dir() {
        return dir;
    }

    public Path logFile() {
        return dir.resolve(io.vmcuda.appliance.worker.WorkerLauncher.WORKER_LOG);
    }

    public Instant started() {
        return started;
    }

    public Instant ended() {
        return ended;
    }

    public SetupTimings timings() {
        return timings;
    }

    public synchronized State state() {
        return state;
    }

    public synchronized String abortReason() {
        return abortReason;
    }

    synchronized int workerReports() {
        return workerReports;
    }

    public long uid() {
        return uid;
    }

    Path lendDir() {
        return lendDir;
    }

    public long bytesH2d() {
        return bytesH2d;
    }

    public long bytesD2h() {
        return bytesD2h;
    }

    public long calls() {
        return calls;
    }

    public Integer exitStatus() {
        return exitStatus;
    }

    public Integer byeStatus() {
        return byeStatus;
    }

    /**
     * The client program's exit status as its client reported it (vmc_ProgramExit); null when none came: the
     * program was killed, ended in _exit(), its exiting thread never made a CUDA call, or its client is older. Not the worker's {@link #exitStatus()}.
     */
    public Integer programExitStatus() {
        return programExitStatus;
    }

    void programExited(int status) {
        programExitStatus = status;
    }

    /** Client connections whose descriptor the worker now holds and the daemon has let go of. */
    public int connectionsHandedOver() {
        return connectionsHandedOver;
    }

    /**
     * A STATS line's running totals. The worker runs the tenant's code, which can write any line on its link: a
     * report is taken only when no figure is below the last one taken (running totals never shrink), so a negative
     * or shrinking figure changes nothing; the figures remain the worker's own word (README, threat model).
     */
    synchronized void stats(long h2d, long d2h, long n, CallLatency latency) {
        if (h2d < bytesH2d || d2h < bytesD2h || n < calls || (latency != null && !latency.atLeast(callLatency))) return;
        bytesH2d = h2d;
        bytesD2h = d2h;
        calls = n;
        if (latency != null) callLatency = latency;
    }

    /** How long the worker's calls took so far (running totals of its STATS lines). */
    public CallLatency callLatency() {
        return callLatency;
    }

    void bye(int status) {
        byeStatus = status;
    }

    void handedOver() {
        connectionsHandedOver++; // only the hand-off chain of this session writes it, one at a time
    }

    void ended(int status) {
        exitStatus = status;
        ended = Instant.now();
    }
}
