package io.vmcuda.appliance;

import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.epoll.Epoll;
import io.netty.channel.epoll.EpollIoHandler;
import io.vmcuda.appliance.admin.AdminServer;
import io.vmcuda.appliance.admin.StatusSource;
import io.vmcuda.appliance.admin.StatusTable;
import io.vmcuda.appliance.cache.BinaryCache;
import io.vmcuda.appliance.cache.ModuleCache;
import io.vmcuda.appliance.admin.XidWatch;
import io.vmcuda.appliance.control.ControlServer;
import io.vmcuda.appliance.control.ControlTls;
import io.vmcuda.appliance.pool.Pool;
import io.vmcuda.appliance.pool.PoolSettings;
import io.vmcuda.appliance.session.DaemonMetrics;
import io.vmcuda.appliance.session.Refusals;
import io.vmcuda.appliance.session.SessionManager;
import io.vmcuda.appliance.session.SessionRecordLog;
import io.vmcuda.appliance.session.TenantConnections;
import io.vmcuda.appliance.worker.WorkerLauncher;
import io.vmcuda.appliance.auth.Authenticator;
import io.vmcuda.appliance.worker.Sandbox;
import io.vmcuda.appliance.worker.SessionCgroups;
import io.vmcuda.appliance.worker.SessionDisks;
import io.vmcuda.appliance.worker.UcxAgent;
import io.vmcuda.appliance.worker.WorkerSocketServer;
import io.vmcuda.scheduler.GpuInventory;
import io.vmcuda.scheduler.GpuScheduler;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.logging.Logger;

/**
 * A running vmcudad: wires inventory, scheduler, cache, sessions and the three sockets (control TCP,
 * admin HTTP, worker Unix) together, and takes them down in order. {@link Vmcudad} is the command line
 * around it; tests start it directly on ephemeral ports.
 */
public final class Daemon implements AutoCloseable {
    private static final Logger LOG = Logger.getLogger(Daemon.class.getName());

    private final EventLoopGroup boss;
    private final EventLoopGroup io;
    private final ScheduledExecutorService timer;
    private final ExecutorService blocking;
    private final SessionManager sessions;
    private final WorkerLauncher launcher;
    /** The driver front end's module cache, or null when cache.module_bytes = 0. */
    private final ModuleCache moduleCache;
    private final ControlServer control;
    private final AdminServer admin;
    private final WorkerSocketServer workerSocket;
    private volatile ApplianceConfig config;
    private final Authenticator auth;
    private final SystemdNotify notify;
    private final Path stateDir;
    /** The pool of appliances this one is in (cluster.etcd), or null. */
    private final Pool pool;
    /** The GPUs' XID errors (null on an appliance without GPUs, or without the helper). */
    private final XidWatch xids;
    private boolean closed;

    private Daemon(DaemonOptions options, ApplianceConfig config, GpuInventory inventory)
            throws IOException, InterruptedException {
        if (!Epoll.isAvailable()) {
            throw new IllegalStateException("Netty epoll transport unavailable (needed to hand sockets to workers): "
                    + Epoll.unavailabilityCause());
        }
        this.config = config;
        this.stateDir = options.stateDir().toAbsolutePath();
        auth = new Authenticator(config.tenants());
        InetSocketAddress listen = options.listen();
        boolean loopback = listen.getAddress() != null && listen.getAddress().isLoopbackAddress();
        if (!auth.required() && !loopback && !options.insecure()) {
            throw new IllegalStateException("refusing to listen on " + listen + " without tenant tokens: anyone who "
                    + "reaches it could run code on the GPUs. Configure tenant.NAME.token_sha256 (vmcudad --new-token), "
                    + "listen on loopback, or pass --insecure");
        }
        byte[] adminToken = config.adminTokenSha256();
        if (adminToken != null && auth.tenants().stream().anyMatch(t -> java.util.Arrays.equals(t.tokenSha256(), adminToken))) {
            throw new IllegalStateException("admin.token_sha256 is also a tenant's token: the operator token must be "
                    + "its own (vmcudad --new-token)");
        }
        if (auth.required() && !config.shmRegions().isEmpty()) {
            LOG.warning("shm.regions " + config.shmRegions() + " go to the workers of every tenant, who can read each "
                    + "other's lanes there: with tenants, list each client VM's region under tenant.NAME.shm_regions");
        }
        for (io.vmcuda.appliance.auth.Tenant t : auth.tenants()) {
            if (config.shmRegions().size() + t.shmRegions().size() > ApplianceConfig.MAX_SHM_REGIONS) {
                throw new IllegalStateException("shm.regions and tenant." + t.name() + ".shm_regions together list more than "
                        + ApplianceConfig.MAX_SHM_REGIONS + " regions");
            }
        }
        if (auth.required()) {
            LOG.info("authentication on: " + auth.tenants().size() + " tenant(s); admin port "
                    + (adminToken != null ? "needs the operator token (admin.token_sha256)"
                                          : "closed except /health: set admin.token_sha256 to read it"));
        } else {
            LOG.warning("no tenants configured: every client that reaches " + listen + " is accepted without a token"
                    + (loopback ? " (loopback only)" : " (--insecure)"));
        }
        Path sessionsDir = stateDir.resolve("sessions");
        Files.createDirectories(sessionsDir);
        Path workerLibDir = WorkerLibDir.resolve(options.workerLibDir(), System.getenv("VMCUDA_WORKER_LIB_DIR"),
                config.workerLibDir());
        if (!Files.isRegularFile(workerLibDir.resolve(WorkerLibDir.LIBRARY))) {
            LOG.warning(WorkerLibDir.LIBRARY + " not found in " + workerLibDir + ": workers will fail to start");
        }
        Sandbox sandbox = Sandbox.resolve(config, workerLibDir);

        boss = new MultiThreadIoEventLoopGroup(1, EpollIoHandler.newFactory());
        io = new MultiThreadIoEventLoopGroup(0, EpollIoHandler.newFactory());
        timer = Executors.newSingleThreadScheduledExecutor(daemonThreads("vmcudad-timer"));
        blocking = Executors.newCachedThreadPool(daemonThreads("vmcudad-blocking"));

        DaemonMetrics metrics = new DaemonMetrics();
        Refusals refusals = new Refusals(metrics);
        GpuScheduler scheduler = new GpuScheduler(inventory, config.schedulerConfig(), timer);
        BinaryCache cache = new BinaryCache(stateDir.resolve("cache"), config.cacheMemoryBytes(), config.cachePublicHashes(),
                config.cacheDiskBytes(), config.cacheTenantDiskBytes());
        cache.limitUploadsInProgress(config.cacheTenantUploadBytes(), config.tenants().size());
        Path socketPath = stateDir.resolve("run").resolve("worker.sock");
        launcher = new WorkerLauncher(socketPath, workerLibDir, config.workerCudaLibDirs(),
                config.workerBlockSize(), config.workerExtraEnv(), sandbox, config.idleReleaseMinutes(),
                config.shmRegions(), config.workerUidPool(), stateDir);
        launcher.useCgroups(SessionCgroups.resolve(config, sandbox != null && !config.tenants().isEmpty()));
        launcher.reclaimUidsAtStart(); // after the sweep of an earlier daemon's session cgroups killed what ran in them
        launcher.offerUcx(UcxAgent.resolve(config, launcher)); // checked as a session would run it (in a session's cgroup)
        launcher.useDisks(SessionDisks.resolve(config, sandbox != null && !config.tenants().isEmpty(), sessionsDir));
        launcher.allowCudaIpc(config.workerCudaIpc());
        sessions = new SessionManager(scheduler, launcher, sessionsDir,
                new SessionRecordLog(stateDir.resolve("sessions.jsonl"), config.sessionRecordsMaxBytes()), metrics, refusals, timer, blocking,
                config.workerStartTimeout(), inventory.gpus().isEmpty() ? inventory.unavailableReason() : null);
        sessions.keepEndedSessionsWithin(config.sessionKeptBytes());
        sessions.watchQuotas(inventory, config.workerQuotaCheck(), config.workerQuotaSlackBytes());
        int totalSlots = inventory.gpus().size() * config.schedulerConfig().maxSessionsPerGpu();
        int defaultShare = config.tenantGpuSharePercent();
        sessions.useTenantShares(t -> t.gpuSlots(totalSlots, defaultShare));
        moduleCache = config.cacheModuleBytes() > 0 ? new ModuleCache(stateDir.resolve("modules"),
                config.cacheModuleBytes(), config.cacheModuleTenantBytes(), config.cachePublicHashes()) : null;
        if (moduleCache != null) {
            BinaryCache.deleteTree(stateDir.resolve("lend")); // loans of a previous run
            sessions.useModuleCache(moduleCache, stateDir.resolve("lend"));
        }
        java.util.Optional<PoolSettings> poolSettings =
                config.poolSettings(options.listen(), options.etcd());
        pool = poolSettings.map(p -> Pool.join(p, inventory, scheduler,
                () -> sessions.activeSessions().size(), Version.get())).orElse(null);
        if (pool != null) sessions.onLoadChange(pool::loadChanged);
        try {
            workerSocket = new WorkerSocketServer(socketPath, io, sessions);
            StatusSource status = new StatusSource(Version.get(), inventory, scheduler, metrics, sessions::activeSessions,
                    stateDir, pool);
            xids = inventory.gpus().isEmpty() ? null : XidWatch.start(workerLibDir, java.util.Map.of());
            status.watchXids(xids);
            control = new ControlServer(options.listen(), boss, io, cache, sessions, refusals, blocking,
                    config.binaryMaxBytes(), auth, config.handshakeTimeout(),
                    new io.vmcuda.appliance.auth.AuthThrottle(config.authFailuresPerMinute()), config.maxHandshakes(),
                    config.maxHandshakesPerSource(), new TenantConnections(config.tenantMaxConnections(), blocking), pool,
                    tenant -> StatusTable.renderForTenant(status, tenant),
                    ControlTls.of(config.controlTls(), config.handshakeTimeout()),
                    new io.vmcuda.appliance.wire.UnfinishedFrames(config.maxUnfinishedFrameBytes()));
            admin = new AdminServer(options.admin(), io, status,
                    new io.vmcuda.appliance.admin.AdminAccess(auth.required(), config.adminTokenSha256()));
            status.stoppingWhen(sessions::stopping);
        } catch (IOException | InterruptedException | RuntimeException e) {
            if (pool != null) pool.close();
            shutdownThreads();
            throw e;
        }
        LOG.info("vmcudad " + Version.get() + " listening on " + control.localAddress() + ", admin on http://"
                + hostPort(admin.localAddress()) + "/status, state in " + stateDir + ", worker library from "
                + workerLibDir + ", " + inventory.gpus().size() + " GPU(s)"
                + (sandbox == null ? ", workers unsandboxed" : ", workers sandboxed as " + sandbox.user()
                        + (config.workerUidPool() == null ? "" : " with one uid per session (worker.uid_range "
                        + config.workerUidPool().describe() + ")"))
                + (inventory.gpus().isEmpty() ? " (" + inventory.unavailableReason() + ")" : ""));
        if (config.controlTls() != null) {
            LOG.info("client connections use TLS 1.3 with the certificate " + config.controlTls().certificate());
        } else if (!config.tenants().isEmpty()) {
            LOG.warning("tenants are configured but client connections are not encrypted: calls and copies cross the "
                    + "network in clear (set control.tls_certificate and control.tls_key; appliance/CONFIG.md \"TLS\")");
        }
        notify = SystemdNotify.fromEnvironment(io, System.getenv("NOTIFY_SOCKET"));
        notify.ready(serving());
    }

    /** The STATUS line systemctl shows. */
    private String serving() {
        return "serving on " + hostPort(control.localAddress()) + ": " + sessions.activeSessions().size() + " session(s)";
    }

    /**
     * SIGHUP: reads {@code file} again. Tenants (tokens and every tenant.NAME limit) take effect for the sessions
     * that start from now on (running ones keep what they started with), and the log level unless the command
     * line fixed it; any other changed key is named as one that takes effect at the next start. A file that does
     * not load, or that would turn tenants on or off, is refused and the running configuration stays.
     */
    public synchronized void reload(Path file, boolean logLevelFromFile) {
        if (file == null) {
            LOG.warning("reload asked for, but the daemon was started without --config: nothing to read");
            return;
        }
        notify.reloading();
        try {
            ApplianceConfig next = ApplianceConfig.load(file);
            List<String> changed = next.changedKeys(config);
            auth.replace(next.tenants());
            launcher.allowCudaIpc(next.workerCudaIpc()); // follows the number of tenants, for sessions to come
            if (moduleCache != null) moduleCache.limitTenants(next.cacheModuleTenantBytes()); // so does the share
            if (logLevelFromFile) OneLineLogFormatter.setLevel(next.logLevel());
            List<String> atRestart = changed.stream()
                    .filter(k -> !k.startsWith(ApplianceConfig.TENANT_PREFIX) && !k.equals("log.level")
                            && !k.equals("cache.module_tenant_bytes")).toList();
            config = next;
            LOG.info("configuration reloaded from " + file + ": " + auth.tenants().size() + " tenant(s)"
                    + (changed.isEmpty() ? ", nothing changed" : "; changed: " + changed)
                    + (atRestart.isEmpty() ? "" : "; these take effect at the next start: " + atRestart));
        } catch (IOException | RuntimeException e) {
            LOG.warning("reload of " + file + " refused, the running configuration stays: " + e.getMessage());
        } finally {
            notify.ready(serving());
        }
    }

    public static Daemon start(DaemonOptions options, ApplianceConfig config, GpuInventory inventory)
            throws IOException, InterruptedException {
        return new Daemon(options, config, inventory);
    }

    public InetSocketAddress controlAddress() {
        return control.localAddress();
    }

    public InetSocketAddress adminAddress() {
        return admin.localAddress();
    }

    public Path stateDir() {
        return stateDir;
    }

    /**
     * Stops taking new sessions, lets the running ones finish for up to session.drain_s (JOINs of theirs are still
     * taken), then ends the rest (each worker gets SIGTERM, then SIGKILL after worker.stop_grace_s) and closes
     * everything. Sessions do not survive the daemon.
     */
    @Override
    public synchronized void close() {
        if (closed) return;
        closed = true;
        Duration drain = config.sessionDrain();
        int running = sessions.activeSessions().size();
        LOG.info("stopping: no new sessions; " + running + " running session(s)"
                + (running > 0 && !drain.isZero() ? " may finish within " + drain.toSeconds() + " s (session.drain_s)" : ""));
        notify.stopping("draining " + running + " session(s)");
        // out of the pool first: no placement sends a client here any more
        if (pool != null) pool.close();
        // JOINs of running sessions are still taken while they finish (a program may start a thread late)
        int left = sessions.drain(drain);
        if (left > 0) LOG.info("ending the " + left + " session(s) still running after session.drain_s");
        control.close();
        sessions.stopAll(config.workerStopGrace());
        // the ended sessions' last work (offers admitted, directories unmounted with their logs kept) finishes first
        blocking.shutdown();
        try {
            if (!blocking.awaitTermination(10, TimeUnit.SECONDS)) LOG.warning("session clean-up still running after 10 s");
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        sessions.recordUnfinished(); // whose clean-up did not finish: their records before the JVM goes
        launcher.releaseDisks(); // what could not be released so
        launcher.closeCgroups();
        if (xids != null) xids.close();
        admin.close();
        workerSocket.close();
        notify.close();
        shutdownThreads();
        LOG.info("stopped");
    }

    private void shutdownThreads() {
        boss.shutdownGracefully(0, 2, TimeUnit.SECONDS).syncUninterruptibly();
        io.shutdownGracefully(0, 2, TimeUnit.SECONDS).syncUninterruptibly();
        timer.shutdownNow();
        blocking.shutdownNow();
    }

    private static String hostPort(InetSocketAddress a) {
        String host = a.getAddress() == null ? a.getHostString() : a.getAddress().getHostAddress();
        return (host.contains(":") ? "[" + host + "]" : host) + ":" + a.getPort();
    }

    private static ThreadFactory daemonThreads(String name) {
        AtomicInteger n = new AtomicInteger();
        return r -> {
            Thread t = new Thread(r, name + "-" + n.incrementAndGet());
            t.setDaemon(true);
            return t;
        };
    }
}
