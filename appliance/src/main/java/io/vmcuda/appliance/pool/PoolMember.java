package io.vmcuda.appliance.pool;

import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.op.Op;
import io.etcd.jetcd.options.DeleteOption;
import io.etcd.jetcd.options.PutOption;
import io.vmcuda.scheduler.GpuInfo;
import io.vmcuda.scheduler.GpuInventory;
import io.vmcuda.scheduler.GpuScheduler;
import io.vmcuda.scheduler.GpuUsage;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.IntSupplier;
import java.util.logging.Logger;

/**
 * This appliance's membership of the pool: its registration under a lease, rewritten every
 * cluster.refresh_s (and at once when its load changes), and the tickets its sessions took up.
 * Every etcd write of the registration happens on one thread, so they never race each other. Losing etcd
 * changes nothing for the sessions the appliance serves; it registers again (under a new lease, its old
 * one may have expired meanwhile) as soon as etcd answers.
 */
final class PoolMember implements AutoCloseable {
    private static final Logger LOG = Logger.getLogger(PoolMember.class.getName());

    private final PoolSettings settings;
    private final PoolKeys keys;
    private final Client etcd;
    private final GpuInventory inventory;
    private final GpuScheduler scheduler;
    private final IntSupplier sessions;
    private final String version;
    /** Ticket deletions one registration transaction carries at most (etcd's default limit is 128 operations). */
    private static final int MAX_TICKET_DELETES = 100;
    private final ScheduledExecutorService thread;
    private final AtomicBoolean publishQueued = new AtomicBoolean();
    /** Tickets whose sessions are now counted in this appliance's load (or that were refused): to delete. */
    private final Set<Long> usedTickets = ConcurrentHashMap.newKeySet();
    private volatile boolean registered;
    private volatile boolean draining;
    /** close() has begun: a refresh it interrupts must not forget the lease that close() revokes. */
    private volatile boolean closing;
    // only on thread
    private long leaseId;
    private int[] publishedLoad;
    private String lastFailure;

    PoolMember(PoolSettings settings, Client etcd, GpuInventory inventory, GpuScheduler scheduler, IntSupplier sessions,
               String version) {
        this.settings = settings;
        this.keys = new PoolKeys(settings.prefix());
        this.etcd = etcd;
        this.inventory = inventory;
        this.scheduler = scheduler;
        this.sessions = sessions;
        this.version = version;
        this.thread = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "vmcudad-pool");
            t.setDaemon(true);
            return t;
        });
    }

    void start() {
        thread.scheduleWithFixedDelay(this::refresh, 0, settings.refresh().toMillis(), TimeUnit.MILLISECONDS);
    }

    boolean registered() {
        return registered;
    }

    /** Rewrites the registration soon (a session started or ended, a ticket was used). */
    void publishSoon() {
        if (publishQueued.compareAndSet(false, true)) {
            try {
                thread.execute(() -> {
                    publishQueued.set(false);
                    refresh();
                });
            } catch (java.util.concurrent.RejectedExecutionException closed) {
                // closing: the lease is revoked anyway
            }
        }
    }

    /** The ticket's session is bound (or refused): its slot is now this appliance's own count. */
    void ticketUsed(long ticket) {
        usedTickets.add(ticket);
        publishSoon();
    }

    /**
     * The GPUs a placement chose for this ticket, when the ticket names this appliance and the tenant that
     * asked for it; empty otherwise (expired, forged, another tenant's, or etcd unreachable: the local policy
     * then chooses, and the ticket is left alone).
     */
    CompletableFuture<java.util.Optional<List<String>>> ticketGpus(long ticket, String tenant) {
        return etcd.getKVClient().get(keys.ticket(ticket))
                .orTimeout(Pool.CALL_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS)
                .handle((r, e) -> {
                    if (e != null || r.getKvs().isEmpty()) return java.util.Optional.<List<String>>empty();
                    TicketRecord t = PoolJson.readTicket(r.getKvs().get(0).getValue());
                    if (t == null || t.gpus() == null || t.gpus().contains(null) || !settings.name().equals(t.appliance())
                            || !tenant.equals(t.tenant())) {
                        return java.util.Optional.<List<String>>empty();
                    }
                    return java.util.Optional.of(List.copyOf(t.gpus()));
                });
    }

    private void refresh() {
        try {
            publish();
            if (!registered) {
                LOG.info("registered in the pool " + settings.prefix() + " (etcd " + String.join(",", settings.etcd())
                        + ") as " + settings.name() + " at " + settings.advertise() + ", lease " + settings.ttl().toSeconds() + " s");
            }
            registered = true;
            lastFailure = null;
        } catch (Exception e) {
            if (closing) return;
            String why = Pool.describe(e);
            if (registered || !why.equals(lastFailure)) {
                LOG.warning("cannot register in the pool (etcd " + String.join(",", settings.etcd()) + "): " + why
                        + "; the sessions here keep running, and the appliance registers again when etcd answers");
            }
            registered = false;
            lastFailure = why;
            leaseId = 0;
        }
    }

    private void publish() throws Exception {
        if (leaseId != 0) {
            try {
                if (Pool.await(etcd.getLeaseClient().keepAliveOnce(leaseId)).getTTL() <= 0) leaseId = 0;
            } catch (Exception e) {
                leaseId = 0; // expired while etcd was away, or etcd is away now: grant() tells which
            }
        }
        if (leaseId == 0) leaseId = Pool.await(etcd.getLeaseClient().grant(settings.ttl().toSeconds())).getID();
        // tickets first: a session bound after this snapshot is in the load below, its ticket deleted next time
        List<Long> used = new ArrayList<>(usedTickets);
        if (used.size() > MAX_TICKET_DELETES) used = used.subList(0, MAX_TICKET_DELETES);
        ApplianceRecord record = record();
        int[] load = record.gpus().stream().mapToInt(ApplianceRecord.Gpu::sessions).toArray();
        PutOption underLease = PutOption.builder().withLeaseId(leaseId).build();
        List<Op> ops = new ArrayList<>(List.of(
                Op.put(keys.appliance(settings.name()), PoolJson.write(record), underLease),
                Op.put(keys.entry(settings.advertise()), ByteSequence.from(settings.name(), StandardCharsets.UTF_8), underLease)));
        for (long t : used) ops.add(Op.delete(keys.ticket(t), DeleteOption.DEFAULT));
        // a load that grew, or tickets turned into sessions, must fail the placements that read the pool before
        if (!used.isEmpty() || publishedLoad == null || grew(publishedLoad, load)) {
            ops.add(Op.put(keys.claims(), ByteSequence.from(settings.name(), StandardCharsets.UTF_8), PutOption.DEFAULT));
        }
        Pool.await(etcd.getKVClient().txn().Then(ops.toArray(Op[]::new)).commit());
        usedTickets.removeAll(used);
        publishedLoad = load;
    }

    private static boolean grew(int[] before, int[] now) {
        if (before.length != now.length) return true;
        for (int i = 0; i < now.length; i++) if (now[i] > before[i]) return true;
        return false;
    }

    ApplianceRecord record() {
        int[] perGpu = scheduler.activeSessionsPerGpu();
        List<ApplianceRecord.Gpu> gpus = new ArrayList<>();
        for (GpuInfo g : inventory.gpus()) {
            GpuUsage u = inventory.usage(g.uuid()).orElse(new GpuUsage(-1, -1));
            gpus.add(new ApplianceRecord.Gpu(g.index(), g.uuid(), g.name(), g.memoryTotalBytes(), g.computeCapability(),
                    perGpu[g.index()], u.memoryUsedBytes(), u.utilizationPercent()));
        }
        return new ApplianceRecord(settings.name(), settings.advertise(), version, List.copyOf(settings.shmHosts()),
                scheduler.config().maxSessionsPerGpu(), sessions.getAsInt(), draining, System.currentTimeMillis(),
                inventory.gpus().isEmpty() ? inventory.unavailableReason() : null, gpus);
    }

    /** Leaves the pool at once (revokes the lease: its keys go with it) instead of after the TTL. */
    @Override
    public void close() {
        draining = true;
        closing = true;
        thread.shutdownNow();
        try {
            thread.awaitTermination(Pool.CALL_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        if (leaseId != 0) {
            try {
                Pool.await(etcd.getLeaseClient().revoke(leaseId));
                LOG.info("left the pool " + settings.prefix() + " (lease revoked)");
            } catch (Exception e) {
                LOG.info("could not revoke the pool lease (" + Pool.describe(e) + "): the registration expires within "
                        + settings.ttl().toSeconds() + " s");
            }
        }
    }
}
