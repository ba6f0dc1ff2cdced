package io.vmcuda.appliance.session;

import io.netty.channel.Channel;
import io.vmcuda.appliance.auth.Tenant;
import io.vmcuda.appliance.cache.CachedBinary;
import io.vmcuda.appliance.control.ControlTls;
import io.vmcuda.appliance.wire.Frames;
import io.vmcuda.appliance.wire.HelloReply;
import io.vmcuda.appliance.worker.FdHandoff;
import io.vmcuda.appliance.worker.WorkerEvents;
import io.vmcuda.appliance.worker.WorkerLauncher;
import io.vmcuda.scheduler.GpuBinding;
import io.vmcuda.scheduler.GpuScheduler;
import io.vmcuda.scheduler.NoGpuAvailableException;
import java.io.IOException;
import java.nio.channels.SeekableByteChannel;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.StandardOpenOption;
import java.util.Set;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * Runs sessions from GPU request to reaped worker: asks the scheduler for GPUs, starts the worker,
 * matches its connect-back to the session, hands client connections over, and on the worker's exit
 * frees the GPUs and writes the session record. Connections are refused with one clear line whenever a
 * step fails.
 */
public final class SessionManager implements WorkerEvents {
    private static final Logger LOG = Logger.getLogger(SessionManager.class.getName());
    /** Session ids stay below 2^53 so JSON readers that use doubles still see them exactly. */
    private static final long ID_MASK = (1L << 53) - 1;
    private static final long WORKER_SOCKET_DRAIN_MS = 2000;
    /** ABORT lines of one session that are logged (a worker that works sends one); see workerAbort. */
    static final int LOGGED_WORKER_REPORTS = 5;

    private final GpuScheduler scheduler;
    private final WorkerLauncher launcher;
    private final Path sessionsDir;
    private final SessionRecordLog records;
    /** Ended sessions whose record waits for their clean-up (finish); the daemon's stop writes what is left. */
    private final Set<Session> unrecorded = ConcurrentHashMap.newKeySet();
    private final DaemonMetrics metrics;
    private final Refusals refusals;
    private final ScheduledExecutorService timer;
    private final Executor blocking;
    private final Duration workerStartTimeout;
    /** Null when the appliance has GPUs; else why not, for the READY message. */
    private final String noGpuReason;
    private final SecureRandom random = new SecureRandom();
    private final ConcurrentHashMap<Long, Session> active = new ConcurrentHashMap<>();
    /** Sessions per tenant from GPU request to record: what tenant.NAME.max_sessions caps. */
    private final ConcurrentHashMap<String, Integer> perTenant = new ConcurrentHashMap<>();
    private volatile boolean stopping;
    /** Why a NEW session is refused while the daemon drains. */
    public static final String STOPPING = "appliance is stopping: it takes no new sessions (running ones may finish)";
    private volatile Runnable loadChanged = () -> { };
    private volatile SessionModules modules; // null: no module cache
    private final io.vmcuda.appliance.cache.ClientLibraries clientLibraries;
    private volatile KeptSessionDirs keptDirs; // null: ended sessions' directories are kept without a bound
    /** GPU slots a tenant's sessions may hold at once (0: no cap); see useTenantShares */
    private volatile java.util.function.ToIntFunction<Tenant> tenantSlots = t -> 0;

    public SessionManager(GpuScheduler scheduler, WorkerLauncher launcher, Path sessionsDir, SessionRecordLog records,
                          DaemonMetrics metrics, Refusals refusals, ScheduledExecutorService timer, Executor blocking,
                          Duration workerStartTimeout, String noGpuReason) {
        this.scheduler = scheduler;
        this.launcher = launcher;
        this.sessionsDir = sessionsDir;
        this.records = records;
        this.metrics = metrics;
        this.refusals = refusals;
        this.timer = timer;
        this.blocking = blocking;
        this.workerStartTimeout = workerStartTimeout;
        this.noGpuReason = noGpuReason;
        this.clientLibraries = new io.vmcuda.appliance.cache.ClientLibraries(
                new io.vmcuda.appliance.worker.LibraryResolver(launcher.libraryPath()));
    }

    /**
     * Serves the driver front end's module images from {@code cache} across sessions; {@code lendRoot} is a
     * directory below the state directory where sessions' loans are made.
     */
    public void useModuleCache(io.vmcuda.appliance.cache.ModuleCache cache, Path lendRoot) {
        this.modules = new SessionModules(cache, lendRoot, blocking, metrics);
        clientLibraries.useStore(cache);
    }

    /** Shared libraries of shipped programs that only their clients have (kept in the module cache). */
    public io.vmcuda.appliance.cache.ClientLibraries clientLibraries() {
        return clientLibraries;
    }

    /**
     * Caps each tenant's sessions to {@code slots.applyAsInt(tenant)} GPU slots at once (one slot: one GPU of
     * one session; 0: no cap), so that one tenant cannot take every slot while another's sessions wait.
     */
    public void useTenantShares(java.util.function.ToIntFunction<Tenant> slots) {
        this.tenantSlots = slots;
    }

    /** Called (on any thread) when a session takes or gives back GPU slots: a pool republishes the load. */
    public void onLoadChange(Runnable listener) {
        loadChanged = listener;
    }

    /**
     * Checks every {@code every} that no session's worker uses more device memory than its tenant's quota plus
     * {@code slackBytes}, as the driver reports it (QuotaWatch), and kills one that does.
     */
    public void watchQuotas(io.vmcuda.scheduler.GpuInventory inventory, Duration every, long slackBytes) {
        if (every.isZero()) return;
        QuotaWatch watch = new QuotaWatch(inventory, slackBytes, this::killOverQuota);
        AtomicBoolean running = new AtomicBoolean();
        timer.scheduleWithFixedDelay(() -> {
            // the driver's answer can take tens of ms (nvidia-smi): off the timer thread, and never two at once
            if (running.compareAndSet(false, true)) {
                blocking.execute(() -> {
                    try {
                        watch.check(active.values());
                    } catch (RuntimeException e) {
                        LOG.log(Level.WARNING, "memory quota check failed", e);
                    } finally {
                        running.set(false);
                    }
                });
            }
        }, every.toMillis(), every.toMillis(), TimeUnit.MILLISECONDS);
    }

    private void killOverQuota(QuotaWatch.Over o) {
        Session s = o.session();
        Process p;
        synchronized (s) {
            if (s.abortReason == null) {
                s.abortReason = "its worker used " + (o.usedBytes() >> 20) + " MiB of GPU memory, past the tenant's quota of "
                        + (o.quotaBytes() >> 20) + " MiB (tenant." + s.tenant().name() + ".max_memory_bytes; the driver's "
                        + "count, checked outside the worker)";
            }
            p = s.process;
        }
        metrics.quotaKill();
        LOG.warning("session " + s.id() + ": " + s.abortReason() + "; killing it");
        p.descendants().forEach(ProcessHandle::destroyForcibly);
        p.destroyForcibly();
    }

    /** Sessions whose worker is starting or running. */
    public Collection<Session> activeSessions() {
        return List.copyOf(active.values());
    }

    /** A NEW connection whose binary is in the cache: get GPUs, start the worker, hand the connection over. */
    public void openNew(Channel client, String program, CachedBinary binary, int gpusWanted, SetupTimings timings) {
        openNew(client, program, binary, gpusWanted, timings, Tenant.ANONYMOUS, null, PlacementHint.NONE);
    }

    /**
     * A NEW connection that ships no executable (binary size 0: the driver front end's static-cudart,
     * library and framework programs): the appliance's plain worker serves it, sandboxed and placed like
     * any other.
     */
    public void openPlain(Channel client, String program, int gpusWanted, Tenant tenant, String clientVisibleDevices,
                          PlacementHint placement) {
        openNew(client, program, CachedBinary.plainWorker(launcher.workerLibDir().resolve(WorkerLauncher.PLAIN_WORKER)),
                gpusWanted, SetupTimings.plainWorker(), tenant, clientVisibleDevices, placement);
    }

    /** Sessions of this tenant that are queued, starting or running. */
    public int tenantSessions(Tenant tenant) {
        return perTenant.getOrDefault(tenant.name(), 0);
    }

    /** The refusal message when the tenant is at its session cap, else null. */
    public static String sessionCapMessage(Tenant tenant) {
        return "tenant '" + tenant.name() + "' has reached its limit of " + tenant.maxSessions()
                + " concurrent session(s) (appliance setting tenant." + tenant.name() + ".max_sessions)";
    }

    private boolean reserveTenantSlot(Tenant tenant) {
        boolean[] ok = {true};
        perTenant.compute(tenant.name(), (k, n) -> {
            int now = n == null ? 0 : n;
            if (tenant.maxSessions() > 0 && now >= tenant.maxSessions()) {
                ok[0] = false;
                return n;
            }
            return now + 1;
        });
        return ok[0];
    }

    private void releaseTenantSlot(Tenant tenant) {
        perTenant.computeIfPresent(tenant.name(), (k, n) -> n <= 1 ? null : n - 1);
    }

    /**
     * @param clientVisibleDevices the client's CUDA_VISIBLE_DEVICES (null: none), applied within the GPUs bound to
     *                             the session (ClientVisibleDevices)
     * @param placement            what a pool's placement chose for this session (PlacementHint.NONE: nothing)
     */
    public void openNew(Channel client, String program, CachedBinary binary, int gpusWanted, SetupTimings timings,
                        Tenant tenant, String clientVisibleDevices, PlacementHint placement) {
        openNew(client, program, binary, gpusWanted, timings, tenant, clientVisibleDevices, placement, Map.of());
    }

    /** @param libraries shared libraries only the client had (file name → the shipped file): the worker finds them */
    public void openNew(Channel client, String program, CachedBinary binary, int gpusWanted, SetupTimings timings,
                        Tenant tenant, String clientVisibleDevices, PlacementHint placement, Map<String, Path> libraries) {
        if (stopping) {
            placement.decided().run();
            refusals.refuse(client, STOPPING);
            return;
        }
        if (!reserveTenantSlot(tenant)) {
            placement.decided().run();
            refusals.refuse(client, sessionCapMessage(tenant));
            return;
        }
        CompletableFuture<GpuBinding> request = scheduler.acquire(gpusWanted, "tenant '" + tenant.name() + "'",
                tenantSlots.applyAsInt(tenant), placement.preferredGpus());
        // a client that hangs up while queued withdraws its request
        client.closeFuture().addListener(f -> request.cancel(false));
        request.whenComplete((binding, error) -> {
            placement.decided().run();
            if (error == null) loadChanged.run();
            if (error != null) {
                releaseTenantSlot(tenant);
                Throwable cause = error instanceof CompletionException ? error.getCause() : error;
                if (cause instanceof NoGpuAvailableException) refusals.refuse(client, cause.getMessage());
                else if (!request.isCancelled()) refusals.refuse(client, "GPU scheduling failed: " + cause);
                return;
            }
            if (!client.isActive() || stopping) { // gone, or queued when the daemon began to stop
                scheduler.release(binding);
                releaseTenantSlot(tenant);
                if (client.isActive()) refusals.refuse(client, STOPPING);
                return;
            }
            // forking can take a while on a busy host: keep it off the scheduler's and Netty's threads
            blocking.execute(() -> launch(client, program, binary, binding, timings, tenant, clientVisibleDevices, libraries));
        });
    }

    private void launch(Channel client, String program, CachedBinary binary, GpuBinding binding, SetupTimings timings,
                        Tenant tenant, String clientVisibleDevices, Map<String, Path> libraries) {
        byte[] key = new byte[32];
        random.nextBytes(key);
        long id;
        do {
            id = random.nextLong() & ID_MASK;
        } while (id == 0 || active.containsKey(id));
        Session s = new Session(id, key, program, binary.sha256(), binding, sessionsDir.resolve(Long.toString(id)), timings,
                tenant);
        synchronized (s) {
            s.newConnection = client;
            s.waitingForWorker.add(client);
        }
        active.put(id, s);
        metrics.sessionStarted(tenant);
        Process p;
        try {
            s.uid = launcher.allocateUid();
            SessionModules m = modules;
            s.lendDir = m == null ? null : m.lendDir(id);
            s.cgroup = launcher.createCgroup(id);
            s.diskMounted = launcher.mountDisk(s.dir());
            p = launcher.start(new WorkerLauncher.WorkerSpec(id, s.keyHex(),
                    binding.isEmpty() ? null : ClientVisibleDevices.workerValue(binding.gpus(), clientVisibleDevices),
                    argv0(program, binary),
                    binary.rewritten(), s.dir(), s.logFile(), tenant.maxMemoryBytes(), s.uid, tenant.shmRegions(),
                    s.lendDir, s.cgroup, libraries));
        } catch (IOException | RuntimeException e) {
            LOG.log(Level.WARNING, "session " + id + ": could not start the worker", e);
            synchronized (s) {
                s.state = Session.State.ABORTED;
                s.abortReason = "worker could not be started: " + e.getMessage();
                s.waitingForWorker.clear();
            }
            refusals.refuse(client, "worker failed to start: " + e.getMessage());
            finish(s, -1);
            return;
        }
        synchronized (s) {
            s.process = p;
        }
        LOG.info("session " + id + ": started worker pid " + p.pid() + " for " + program.replaceAll("\\p{Cntrl}", "?") + " ("
                + (binary.isPlainWorker() ? "plain worker" : binary.sha256()) + ") on GPUs " + binding + "; log " + s.logFile());
        p.onExit().thenAccept(exited -> workerExited(s, exited.exitValue()));
        timer.schedule(() -> startTimedOut(s), workerStartTimeout.toMillis(), TimeUnit.MILLISECONDS);
        client.closeFuture().addListener(f -> newConnectionClosed(s, client));
    }

    /** argv[0]: the client's program name, made safe for a process title. */
    private static String argv0(String program, CachedBinary binary) {
        String n = program.replaceAll("[\\p{Cntrl}]", "?");
        if (n.isBlank()) n = binary.name().isBlank() ? "vmcuda-worker" : binary.name();
        return n.length() > 255 ? n.substring(0, 255) : n;
    }

    /** A JOIN connection: check id and key, then hand it to that session's worker. */
    public void join(Channel client, long sessionId, byte[] key) {
        join(client, sessionId, key, null);
    }

    /** As above; a non-null tenant must be the session's own (a token of another tenant cannot join). */
    public void join(Channel client, long sessionId, byte[] key, Tenant tenant) {
        Session s = active.get(sessionId);
        if (s == null || !MessageDigest.isEqual(s.key(), key)
                || (tenant != null && !tenant.name().equals(s.tenant().name()))) {
            refusals.refuse(client, "unknown session " + sessionId + " or wrong session key");
            return;
        }
        Channel worker;
        synchronized (s) {
            switch (s.state) {
                case STARTING:
                    s.waitingForWorker.add(client);
                    client.closeFuture().addListener(f -> {
                        synchronized (s) {
                            s.waitingForWorker.remove(client);
                        }
                    });
                    return;
                case ACTIVE:
                    worker = s.worker;
                    break;
                default:
                    worker = null;
            }
        }
        if (worker == null) refusals.refuse(client, "session " + sessionId + " has ended");
        else handOff(s, client, worker);
    }

    @Override
    public boolean workerConnected(long sessionId, String keyHex, Channel channel) {
        Session s = active.get(sessionId);
        if (s == null || !MessageDigest.isEqual(s.keyHex().getBytes(StandardCharsets.US_ASCII),
                keyHex.toLowerCase().getBytes(StandardCharsets.US_ASCII))) {
            return false;
        }
        List<Channel> waiting;
        synchronized (s) {
            if (s.state != Session.State.STARTING) return false;
            s.state = Session.State.ACTIVE;
            s.worker = channel;
            waiting = new ArrayList<>(s.waitingForWorker);
            s.waitingForWorker.clear();
        }
        long nanos = System.nanoTime() - s.launchNanos;
        s.timings().workerStarted(TimeUnit.NANOSECONDS.toMillis(nanos));
        metrics.workerStarted(nanos);
        LOG.info("session " + s.id() + " ready: " + s.program() + " on GPUs " + s.binding() + "; " + s.timings());
        for (Channel c : waiting) handOff(s, c, channel);
        return true;
    }

    @Override
    public void workerModuleQuery(long sessionId, String sha256, long size, Channel worker) {
        Session s = active.get(sessionId);
        SessionModules m = modules;
        if (s == null || m == null) {
            io.vmcuda.appliance.worker.ModuleReplies.answer(worker, sha256, false);
        } else if (!s.moduleQueryPending.compareAndSet(false, true)) {
            // the worker library asks one question at a time: a flood is tenant code, and ends its session
            LOG.warning("session " + sessionId + ": a second MODULE? before the first was answered; closing its worker link");
            worker.close();
        } else {
            m.query(s, sha256, size, worker);
        }
    }

    @Override
    public void workerStats(long sessionId, long bytesH2d, long bytesD2h, long calls, CallLatency latency) {
        Session s = active.get(sessionId);
        if (s != null) s.stats(bytesH2d, bytesD2h, calls, latency);
    }

    /**
     * A worker's ABORT lines are the session's own (the first is its record's reason), but the worker runs the tenant's
     * code, which can write any number of them on its link: 200,001 lines (66 MB of log) in 3.5 s in a review. So the
     * first few of a session are logged, then one line, and its "ended" line counts the rest.
     */
    @Override
    public void workerAbort(long sessionId, String reason) {
        Session s = active.get(sessionId);
        if (s == null) return;
        int n;
        synchronized (s) {
            if (s.abortReason == null) s.abortReason = reason;
            n = ++s.workerReports;
        }
        if (n <= LOGGED_WORKER_REPORTS) {
            LOG.info("session " + sessionId + ": worker reports: " + reason);
        } else if (n == LOGGED_WORKER_REPORTS + 1) {
            LOG.warning("session " + sessionId + ": its worker sent more than " + LOGGED_WORKER_REPORTS
                    + " reports; the rest are counted, not logged (the session's end says how many)");
        }
    }

    @Override
    public void programExit(long sessionId, int status) {
        Session s = active.get(sessionId);
        if (s != null) s.programExited(status);
    }

    @Override
    public void workerBye(long sessionId, int exitStatus) {
        Session s = active.get(sessionId);
        if (s != null) s.bye(exitStatus);
    }

    private void handOff(Session s, Channel client, Channel worker) {
        int gpus = s.binding().gpus().size();
        String msg = gpus == 0 && noGpuReason != null ? "appliance has no usable GPU: " + noGpuReason : "";
        synchronized (s) {
            s.handoffTail = s.handoffTail.handle((x, e) -> null).thenCompose(x -> {
                if (!client.isActive()) return CompletableFuture.completedFuture(null);
                // from here the daemon's copy closing does not end the connection: it counts against its
                // tenant's cap until the session ends or the socket table shows it closed (ConnectionSlot)
                ConnectionSlot slot = ConnectionSlot.of(client);
                if (slot != null) {
                    slot.handingOver();
                    synchronized (s) {
                        // those a scan found closed go now: a long session of short-lived threads keeps few
                        s.connectionSlots.removeIf(ConnectionSlot::released);
                        s.connectionSlots.add(slot);
                    }
                }
                byte[] linkKey = ControlTls.on(client) ? ControlTls.newLinkKey() : null;
                return FdHandoff.handOff(client,
                        Frames.helloReply(client.alloc(), HelloReply.ready(s.id(), s.key(), gpus, msg, linkKey)), worker, linkKey)
                        .whenComplete((done, failure) -> { if (linkKey != null) java.util.Arrays.fill(linkKey, (byte) 0); })
                        .thenRun(s::handedOver)
                        .exceptionally(e -> {
                            LOG.warning("session " + s.id() + ": hand-off failed: " + e.getMessage());
                            if (slot != null) slot.release(); // the worker never got it
                            return null;
                        });
            });
        }
    }

    private void startTimedOut(Session s) {
        List<Channel> waiting;
        Process p;
        synchronized (s) {
            if (s.state != Session.State.STARTING) return;
            s.abortReason = "worker did not connect within " + workerStartTimeout.toSeconds() + " s";
            waiting = new ArrayList<>(s.waitingForWorker);
            s.waitingForWorker.clear();
            p = s.process;
            s.state = Session.State.ABORTED;
        }
        LOG.warning("session " + s.id() + ": " + s.abortReason() + "; killing it");
        for (Channel c : waiting) refusals.refuse(c, startFailure(s));
        p.destroyForcibly();
    }

    /** The NEW connection closed: after the hand-off that is the daemon letting go; before it, the client quit. */
    private void newConnectionClosed(Session s, Channel client) {
        Process p;
        synchronized (s) {
            if (s.state != Session.State.STARTING || s.newConnection != client) return;
            s.state = Session.State.ABORTED;
            s.abortReason = "client disconnected before its worker was ready";
            s.waitingForWorker.clear();
            p = s.process;
        }
        LOG.info("session " + s.id() + ": " + s.abortReason() + "; killing the worker");
        p.destroyForcibly();
    }

    private void workerExited(Session s, int status) {
        List<Channel> waiting;
        Channel worker;
        synchronized (s) {
            waiting = new ArrayList<>(s.waitingForWorker);
            s.waitingForWorker.clear();
            if (s.state == Session.State.STARTING) {
                s.abortReason = "worker exited with status " + status + " before connecting";
                s.state = Session.State.ABORTED;
            }
            // ACTIVE: ended or aborted is decided in finish(), after the worker's last lines (ABORT) are read
            worker = s.worker;
        }
        for (Channel c : waiting) refusals.refuse(c, startFailure(s));
        if (worker == null) {
            finish(s, status);
            return;
        }
        // The worker's last STATS and BYE lines may still be unread in its Unix socket: record the session
        // once the daemon has read up to the socket's end. A grandchild that inherited the socket could
        // keep it open, so stop waiting after a short grace.
        worker.closeFuture().addListener(f -> finish(s, status));
        timer.schedule(() -> {
            worker.close();
        }, WORKER_SOCKET_DRAIN_MS, TimeUnit.MILLISECONDS);
    }

    private void finish(Session s, int status) {
        // a worker that exited by itself was not stopped by the memory limit, even if a helper process of it was
        String overMemory = status != 0 ? memoryLimitReached(s) : null;
        synchronized (s) {
            if (overMemory != null && s.state != Session.State.ENDED) {
                // the kernel's reason comes first: "killed by signal 9" alone would leave the tenant guessing
                s.abortReason = overMemory;
                if (s.state == Session.State.ACTIVE) s.state = Session.State.ABORTED;
            }
            if (s.state == Session.State.ACTIVE) {
                // a worker the daemon had to stop, or one that reported ABORT, counts as aborted even if it exited 0
                s.state = status == 0 && s.abortReason == null ? Session.State.ENDED : Session.State.ABORTED;
                if (status != 0 && s.abortReason == null) {
                    s.abortReason = status > 128 && status < 160 ? "worker killed by signal " + (status - 128)
                            : "worker exited with status " + status;
                }
            }
        }
        s.ended(status);
        // the worker and every descriptor it held are gone: so are the session's connections
        List<ConnectionSlot> slots;
        synchronized (s) {
            slots = new ArrayList<>(s.connectionSlots);
            s.connectionSlots.clear();
        }
        slots.forEach(ConnectionSlot::release);
        SessionModules m = modules;
        if (overMemory != null) metrics.memoryLimitKill();
        scheduler.release(s.binding());
        loadChanged.run();
        releaseTenantSlot(s.tenant());
        metrics.sessionEnded(s); // first: a scrape in between must not see the bytes counters go back
        unrecorded.add(s); // before it leaves the table: at no moment is its directory taken for an ended one's
        active.remove(s.id());
        // The worker is PID 1 of its PID namespace (and dies with its launcher): with it gone, nothing of the
        // session runs as its uid. Giving the directory back walks a tree the tenant made: off the event loop. The
        // record comes last: an operator who sees the session ended finds its log back on the state disk.
        Runnable cleanUp = () -> {
            try {
                // first what still runs of the session goes (with its cgroup), then what its uid owned
                if (s.cgroup != null) s.cgroup.close();
                launcher.releaseUid(s.uid(), s.dir());
                if (m != null) m.sessionEnded(s);
                if (s.diskMounted) launcher.releaseDisk(s.dir(), s.logFile()); // after the offers are read from it
                KeptSessionDirs k = keptDirs;
                if (k != null) k.trim(this::notEnded); // this session's directory too, from the next session's end on
            } finally {
                record(s, "");
            }
        };
        try {
            blocking.execute(cleanUp);
        } catch (RejectedExecutionException stopping) {
            cleanUp.run(); // the daemon is past its clean-up pool's end: do it here rather than not at all
        }
    }

    /**
     * Keeps what ended sessions leave in their directories (their logs) within {@code bytes}, removing the oldest
     * first (session.kept_bytes; KeptSessionDirs): now, for what earlier runs of the daemon left, and after each
     * session's clean-up.
     */
    public void keepEndedSessionsWithin(long bytes) {
        KeptSessionDirs k = new KeptSessionDirs(sessionsDir, bytes);
        k.trim(this::notEnded);
        keptDirs = k;
    }

    /** The ids of sessions that run, start, or are still being cleaned up: their directories are in use. */
    private Set<Long> notEnded() {
        Set<Long> ids = new java.util.HashSet<>(active.keySet());
        for (Session s : List.copyOf(unrecorded)) ids.add(s.id());
        return ids;
    }

    /** Writes the session's record and its "ended" log line, once (the clean-up, or the daemon's stop). */
    private void record(Session s, String note) {
        if (!unrecorded.remove(s)) return;
        records.append(s);
        LOG.info("session " + s.id() + " " + s.state().name().toLowerCase() + ": " + s.program()
                + (s.programExitStatus() == null ? " (no exit status reported: killed, _exit(), or its exiting thread made no CUDA call)"
                        : " exited with status " + s.programExitStatus())
                + "; worker exit status " + s.exitStatus() + ", " + s.calls() + " calls, " + s.bytesH2d()
                + " B to the GPU, " + s.bytesD2h() + " B back"
                + (s.abortReason() == null ? "" : " (" + s.abortReason() + ")")
                + (s.workerReports() > LOGGED_WORKER_REPORTS
                        ? "; " + (s.workerReports() - LOGGED_WORKER_REPORTS) + " more worker reports not logged" : "")
                + note);
    }

    /**
     * At the daemon's stop, after its clean-up pool had its time: the sessions whose clean-up is still running get
     * their record now, so that none is lost with the JVM.
     */
    public void recordUnfinished() {
        for (Session s : List.copyOf(unrecorded)) record(s, "; recorded at the daemon's stop, its clean-up unfinished");
    }

    private String startFailure(Session s) {
        String overMemory = memoryLimitReached(s);
        if (overMemory != null) return "worker stopped while starting: " + overMemory;
        String last = lastLine(s.logFile());
        return "worker failed to start; see " + s.logFile() + (last.isEmpty() ? "" : ": " + last);
    }

    /** Why the kernel stopped the session when it reached its cgroup's memory limit; null when it did not. */
    private String memoryLimitReached(Session s) {
        if (s.cgroup == null || s.cgroup.oomKills() == 0) return null;
        return "its processes reached the session's memory limit of " + (s.cgroup.memoryMaxBytes() >> 20)
                + " MiB (worker.memory_max) and the kernel stopped them";
    }

    /**
     * The last non-empty line of a worker log (reads only its tail: logs can be large). The log lies in the
     * session directory, which the tenant's code owns while it runs: only the daemon's own file is read (a
     * regular file owned by the daemon, opened without following a link), never what the tenant put there.
     */
    static String lastLine(Path log) {
        try {
            if (!Files.isRegularFile(log, LinkOption.NOFOLLOW_LINKS)
                    || !Files.getOwner(log, LinkOption.NOFOLLOW_LINKS).equals(Files.getOwner(log.getParent().getParent()))) {
                return "";
            }
        } catch (IOException | RuntimeException e) {
            return "";
        }
        try (SeekableByteChannel f = Files.newByteChannel(log, Set.of(StandardOpenOption.READ, LinkOption.NOFOLLOW_LINKS))) {
            long len = f.size();
            int n = (int) Math.min(len, 4096);
            java.nio.ByteBuffer tail = java.nio.ByteBuffer.allocate(n);
            f.position(len - n);
            while (tail.hasRemaining() && f.read(tail) > 0) {
                // read the tail
            }
            String[] lines = new String(tail.array(), 0, tail.position(), StandardCharsets.UTF_8).split("\n");
            for (int i = lines.length - 1; i >= 0; i--) {
                if (!lines[i].isBlank()) return lines[i].strip();
            }
        } catch (IOException e) {
            // no log yet: the worker did not get as far as writing one
        }
        return "";
    }

    /**
     * The first step of stopping: no new session is opened (JOINs of running ones still are), and the caller
     * waits up to {@code drain} for the running ones to end on their own. Returns how many are still running.
     */
    public int drain(Duration drain) {
        stopping = true;
        long deadline = System.nanoTime() + drain.toNanos();
        try {
            while (!active.isEmpty() && System.nanoTime() < deadline) Thread.sleep(100);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        return active.size();
    }

    public boolean stopping() {
        return stopping;
    }

    /**
     * Daemon shutdown: running sessions end with it. Each worker gets SIGTERM, then SIGKILL after
     * {@code grace}, so no worker outlives the daemon holding GPU memory; every session is still recorded.
     */
    public void stopAll(Duration grace) {
        stopping = true;
        List<Session> sessions = List.copyOf(active.values());
        List<CompletableFuture<Process>> exits = new ArrayList<>();
        for (Session s : sessions) {
            Process p;
            synchronized (s) {
                if (s.abortReason == null) s.abortReason = "appliance daemon stopped";
                p = s.process;
            }
            if (p == null) continue;
            p.destroy();
            exits.add(p.onExit());
        }
        try {
            CompletableFuture.allOf(exits.toArray(new CompletableFuture[0])).get(grace.toMillis(), TimeUnit.MILLISECONDS);
        } catch (Exception timedOutOrInterrupted) {
            for (Session s : sessions) {
                Process p;
                synchronized (s) {
                    p = s.process;
                }
                if (p != null && p.isAlive()) {
                    LOG.warning("session " + s.id() + ": worker ignored SIGTERM for " + grace.toSeconds() + " s; killing it");
                    p.destroyForcibly();
                }
            }
        }
        // let the exit handlers write their records before the JVM goes
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
        while (!active.isEmpty() && System.nanoTime() < deadline) {
            try {
                Thread.sleep(20);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
        }
    }
}
