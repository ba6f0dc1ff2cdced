package io.vmcuda.appliance.pool;

import io.etcd.jetcd.Client;
import io.vmcuda.scheduler.GpuInventory;
import io.vmcuda.scheduler.GpuScheduler;
import io.vmcuda.scheduler.pool.PoolRequest;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.IntSupplier;

/**
 * The appliance's part in a pool of appliances on etcd (cluster.etcd): its registration
 * ({@link PoolMember}) and the placement questions it answers for the pool ({@link PoolPlacer}).
 */
public final class Pool implements AutoCloseable {
    /** Longest wait for one etcd call: a placement or a session start never hangs on an unreachable etcd. */
    static final Duration CALL_TIMEOUT = Duration.ofSeconds(3);

    private final PoolSettings settings;
    private final Client etcd;
    private final PoolMember member;
    private final PoolPlacer placer;
    private final AtomicLong placements = new AtomicLong();
    private final AtomicLong placementsRefused = new AtomicLong();

    private Pool(PoolSettings settings, GpuInventory inventory, GpuScheduler scheduler, IntSupplier sessions, String version) {
        this.settings = settings;
        this.etcd = Client.builder().endpoints(settings.endpoints()).connectTimeout(CALL_TIMEOUT)
                .retryMaxDuration(CALL_TIMEOUT).build();
        this.member = new PoolMember(settings, etcd, inventory, scheduler, sessions, version);
        this.placer = new PoolPlacer(settings, etcd);
    }

    /** Joins the pool: registers now and keeps the registration fresh (a failure is retried, not fatal). */
    public static Pool join(PoolSettings settings, GpuInventory inventory, GpuScheduler scheduler, IntSupplier sessions,
                            String version) {
        if (settings.advertise().startsWith("127.") || settings.advertise().startsWith("[::1]")
                || settings.advertise().startsWith("localhost:")) {
            java.util.logging.Logger.getLogger(Pool.class.getName()).warning("the pool will send clients to "
                    + settings.advertise() + ", a loopback address: only clients on this host can reach it (set "
                    + "cluster.advertise, or --listen on the client network)");
        }
        Pool p = new Pool(settings, inventory, scheduler, sessions, version);
        p.member.start();
        return p;
    }

    public PoolSettings settings() {
        return settings;
    }

    public boolean registered() {
        return member.registered();
    }

    public long placements() {
        return placements.get();
    }

    public long placementsRefused() {
        return placementsRefused.get();
    }

    /** Placements that found the pool changed under them (another placement won a slot) and read it again. */
    public long placementRacesLost() {
        return placer.racesLost();
    }

    /**
     * Where a client of this tenant should open its session. Blocks for a few etcd round trips: call it
     * off the event loop.
     *
     * @return the ticket and endpoint; or a refusal's message
     */
    public Answer place(PoolRequest request, String tenant, int tenantMaxSessions) {
        try {
            PoolPlacer.Placement p = placer.place(request, tenant,
                    tenantMaxSessions > 0 ? tenantMaxSessions : PoolPlacer.DEFAULT_TICKETS_PER_TENANT);
            placements.incrementAndGet();
            return new Answer(p.ticket(), p.endpoint(), p.gpus().size(), null);
        } catch (PoolPlacer.PlacementRefused e) {
            placementsRefused.incrementAndGet();
            return new Answer(0, null, 0, e.getMessage());
        }
    }

    /** A placement's answer: {@code refusal} is null when the client was placed. */
    public record Answer(long ticket, String endpoint, int gpus, String refusal) {}

    /**
     * The GPUs the placement of this ticket chose here; empty when the ticket is not a live one of this
     * tenant for this appliance (then the local policy chooses and the ticket is not this session's to use).
     */
    public CompletableFuture<java.util.Optional<List<String>>> ticketGpus(long ticket, String tenant) {
        return member.ticketGpus(ticket, tenant);
    }

    /** The ticket's session is bound or refused here: its promise is kept (or void) and can go. */
    public void ticketUsed(long ticket) {
        member.ticketUsed(ticket);
    }

    /** A session started or ended: the registration's load follows now rather than at the next refresh. */
    public void loadChanged() {
        member.publishSoon();
    }

    @Override
    public void close() {
        member.close();
        etcd.close();
    }

    static <T> T await(CompletableFuture<T> f) throws Exception {
        try {
            return f.get(CALL_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
        } catch (TimeoutException e) {
            f.cancel(true);
            throw new TimeoutException("no answer within " + CALL_TIMEOUT.toSeconds() + " s");
        } catch (ExecutionException e) {
            throw e.getCause() instanceof Exception c ? c : e;
        }
    }

    /** An etcd failure in one line. */
    static String describe(Throwable e) {
        while ((e instanceof ExecutionException || e instanceof java.util.concurrent.CompletionException) && e.getCause() != null)
            e = e.getCause();
        String m = e.getMessage();
        return m == null || m.isBlank() ? e.getClass().getSimpleName() : m.replaceAll("\\s+", " ").strip();
    }
}
