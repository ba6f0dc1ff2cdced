package io.vmcuda.appliance.pool;

import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.KeyValue;
import io.etcd.jetcd.kv.GetResponse;
import io.etcd.jetcd.op.Cmp;
import io.etcd.jetcd.op.CmpTarget;
import io.etcd.jetcd.op.Op;
import io.etcd.jetcd.options.GetOption;
import io.etcd.jetcd.options.PutOption;
import io.vmcuda.scheduler.pool.PoolAppliance;
import io.vmcuda.scheduler.pool.PoolChoice;
import io.vmcuda.scheduler.pool.PoolRequest;
import java.nio.charset.StandardCharsets;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.logging.Logger;

/**
 * Answers placement questions for the whole pool (any appliance can): reads every registration and every
 * outstanding ticket at one etcd revision, lets cluster.policy choose an appliance and GPUs, and promises
 * the slot with a ticket written in a transaction that succeeds only if no placement or load change came
 * in between (the revision of the claims key, PoolKeys). A lost race reads the pool again, so two
 * placements racing for the last free slot cannot both win.
 */
final class PoolPlacer {
    private static final Logger LOG = Logger.getLogger(PoolPlacer.class.getName());
    /**
     * Races lost in a row before the placement gives up (each one means another placement, or a load change,
     * just won). Measured in PoolTest: 27 clients placed at once on three appliances lost 184 races in all.
     */
    private static final int ATTEMPTS = 32;

    private final PoolSettings settings;
    private final PoolKeys keys;
    private final Client etcd;
    private final SecureRandom random = new SecureRandom();
    private final java.util.concurrent.atomic.AtomicLong racesLost = new java.util.concurrent.atomic.AtomicLong();

    PoolPlacer(PoolSettings settings, Client etcd) {
        this.settings = settings;
        this.keys = new PoolKeys(settings.prefix());
        this.etcd = etcd;
    }

    /**
     * Placements in flight (tickets not yet taken up) one tenant may hold at once, when its own
     * tenant.NAME.max_sessions does not say: a token looping PLACE could otherwise promise away every slot
     * of the pool for cluster.ticket_ttl_s.
     */
    static final int DEFAULT_TICKETS_PER_TENANT = 64;

    /**
     * Where the tenant's client goes: blocks for a few etcd round trips.
     *
     * @param maxTickets placements of this tenant that may be in flight at once
     */
    Placement place(PoolRequest request, String tenant, int maxTickets) throws PlacementRefused {
        try {
            for (int attempt = 0; attempt < ATTEMPTS; attempt++) {
                GetResponse claims = Pool.await(etcd.getKVClient().get(keys.claims()));
                long revision = claims.getHeader().getRevision();
                GetOption atRevision = GetOption.builder().isPrefix(true).withRevision(revision).build();
                List<KeyValue> registrations = Pool.await(etcd.getKVClient().get(keys.appliances(), atRevision)).getKvs();
                List<TicketRecord> tickets = new ArrayList<>();
                for (KeyValue kv : Pool.await(etcd.getKVClient().get(keys.tickets(), atRevision)).getKvs()) {
                    TicketRecord t = PoolJson.readTicket(kv.getValue());
                    if (t != null) tickets.add(t);
                }
                long inFlight = tickets.stream().filter(t -> tenant.equals(t.tenant())).count();
                if (inFlight >= maxTickets) {
                    throw new PlacementRefused("tenant '" + tenant + "' has " + inFlight + " placements in flight, its limit "
                            + "(tenant." + tenant + ".max_sessions, else " + DEFAULT_TICKETS_PER_TENANT + "); try again when "
                            + "its programs have started");
                }
                List<PoolAppliance> pool = pool(registrations, tickets);
                Optional<PoolChoice> choice = settings.policy().choose(pool, request);
                if (choice.isEmpty()) {
                    throw new PlacementRefused(pool.isEmpty()
                            ? "the pool " + settings.prefix() + " has no live appliance"
                            : "no appliance of the pool (" + pool.size() + " live) has " + request.describe()
                              + " with a free session slot now; try again later");
                }
                long ticket = newTicket();
                long lease = Pool.await(etcd.getLeaseClient().grant(settings.ticketTtl().toSeconds())).getID();
                TicketRecord record = new TicketRecord(choice.get().appliance().name(), choice.get().gpuUuids(), tenant,
                        System.currentTimeMillis());
                Cmp unchanged = claims.getKvs().isEmpty()
                        ? new Cmp(keys.claims(), Cmp.Op.EQUAL, CmpTarget.version(0))
                        : new Cmp(keys.claims(), Cmp.Op.EQUAL, CmpTarget.modRevision(claims.getKvs().get(0).getModRevision()));
                boolean won = Pool.await(etcd.getKVClient().txn().If(unchanged).Then(
                        Op.put(keys.claims(), ByteSequence.from(Long.toUnsignedString(ticket), StandardCharsets.UTF_8), PutOption.DEFAULT),
                        Op.put(keys.ticket(ticket), PoolJson.write(record), PutOption.builder().withLeaseId(lease).build()))
                        .commit()).isSucceeded();
                if (won) {
                    return new Placement(ticket, choice.get().appliance().endpoint(), choice.get().appliance().name(),
                            choice.get().gpuUuids());
                }
                racesLost.incrementAndGet();
                Pool.await(etcd.getLeaseClient().revoke(lease));
                // a random pause that grows with each loss, so that the placements racing here fall apart
                Thread.sleep(java.util.concurrent.ThreadLocalRandom.current().nextInt(1 + 4 * attempt));
            }
            throw new PlacementRefused("the pool is too busy: " + ATTEMPTS + " placements in a row were overtaken by others");
        } catch (PlacementRefused e) {
            throw e;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new PlacementRefused("the appliance is stopping");
        } catch (RuntimeException e) {
            LOG.log(java.util.logging.Level.WARNING, "placement failed", e);
            throw new PlacementRefused("the placement failed on this appliance: " + Pool.describe(e));
        } catch (Exception e) {
            throw new PlacementRefused("the pool's etcd (" + String.join(",", settings.etcd()) + ") did not answer: "
                    + Pool.describe(e));
        }
    }

    /** Placement transactions that lost to another placement or a load change and read the pool again. */
    long racesLost() {
        return racesLost.get();
    }

    private List<PoolAppliance> pool(List<KeyValue> registrations, List<TicketRecord> tickets) {
        Map<String, Integer> promised = new HashMap<>(); // appliance name + " " + GPU UUID -> tickets
        for (TicketRecord t : tickets) {
            if (t.gpus() == null) continue;
            for (String g : t.gpus()) promised.merge(t.appliance() + " " + g, 1, Integer::sum);
        }
        List<PoolAppliance> pool = new ArrayList<>();
        for (KeyValue kv : registrations) {
            ApplianceRecord r = PoolJson.readAppliance(kv.getValue());
            try {
                Map<String, Integer> mine = new HashMap<>();
                for (ApplianceRecord.Gpu g : r.gpus()) mine.put(g.uuid(), promised.getOrDefault(r.name() + " " + g.uuid(), 0));
                pool.add(r.toPool(mine));
            } catch (RuntimeException malformed) {
                // not JSON, or a field missing (null): one bad value must not stop placement for the whole pool
                LOG.warning("ignoring the malformed pool registration " + kv.getKey().toString(StandardCharsets.UTF_8));
            }
        }
        return pool;
    }

    private long newTicket() {
        long t;
        do {
            t = random.nextLong() & Long.MAX_VALUE;
        } while (t == 0);
        return t;
    }

    /** A placement: the client opens its session at {@code endpoint}, presenting {@code ticket}. */
    record Placement(long ticket, String endpoint, String appliance, List<String> gpus) {}

    /** The pool cannot place the client now; the message says why, for the client to print. */
    static final class PlacementRefused extends Exception {
        PlacementRefused(String message) {
            super(message);
        }
    }
}
