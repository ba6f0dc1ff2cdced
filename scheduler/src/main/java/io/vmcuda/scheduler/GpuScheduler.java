package io.vmcuda.scheduler;

import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.Deque;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

/**
 * Hands out GPUs to sessions: k distinct GPUs per request, each GPU shared by at most
 * {@code maxSessionsPerGpu} sessions, chosen by the configured {@link PlacementPolicy}.
 * Requests that cannot be served wait in strict FIFO order (a later small request never overtakes an
 * earlier one, so large requests cannot starve) until a release makes room or the queue timeout passes.
 * A request may name an owner (a tenant) and a cap on the slots that owner may hold at once, its share:
 * a request that would take its owner past the share waits without holding up the requests of others
 * behind it, so that one tenant cannot hold every slot while another waits.
 * Requests complete asynchronously so the daemon's network threads never block on the queue.
 */
public final class GpuScheduler {
    private final List<GpuInfo> gpus;
    private final GpuInventory inventory;
    private final SchedulerConfig config;
    private final ScheduledExecutorService timer;

    // guarded by this
    private final int[] activeSessions;
    private final long[] lastAssignedSeq;
    private long assignSeq;
    private final Deque<Waiter> queue = new ArrayDeque<>();
    private final java.util.Map<String, Integer> heldByOwner = new java.util.HashMap<>();

    /** @param timer runs queue timeouts; shared with the caller, not shut down here */
    public GpuScheduler(GpuInventory inventory, SchedulerConfig config, ScheduledExecutorService timer) {
        this.inventory = inventory;
        this.gpus = List.copyOf(inventory.gpus());
        for (int i = 0; i < gpus.size(); i++) {
            // slots are kept in arrays indexed by GPU index
            if (gpus.get(i).index() != i) throw new IllegalArgumentException("GPU indexes must be 0..n-1 in order");
        }
        this.config = config;
        this.timer = timer;
        this.activeSessions = new int[gpus.size()];
        this.lastAssignedSeq = new long[gpus.size()];
    }

    public SchedulerConfig config() {
        return config;
    }

    /**
     * Requests {@code count} distinct GPUs. The future completes with the binding, or exceptionally with
     * {@link NoGpuAvailableException} (impossible request, or queue timeout). Cancelling it withdraws the
     * request. With zero GPUs in the inventory it completes at once with an empty binding.
     */
    public CompletableFuture<GpuBinding> acquire(int count) {
        return acquire(count, null, 0);
    }

    /**
     * As {@link #acquire(int)}, counted against {@code owner}'s share: at most {@code ownerSlots} slots
     * (one per GPU per session) held by the owner's sessions at once; {@code ownerSlots <= 0}: no cap.
     */
    public CompletableFuture<GpuBinding> acquire(int count, String owner, int ownerSlots) {
        return acquire(count, owner, ownerSlots, List.of());
    }

    /**
     * As {@link #acquire(int, String, int)}, taking the GPUs with these UUIDs first when they have a free slot
     * (a pool's placement chose them); the policy orders the rest.
     */
    public CompletableFuture<GpuBinding> acquire(int count, String owner, int ownerSlots, List<String> preferredUuids) {
        if (count < 1) throw new IllegalArgumentException("count must be >= 1");
        if (gpus.isEmpty()) return CompletableFuture.completedFuture(new GpuBinding(List.of()));
        if (count > gpus.size()) {
            return CompletableFuture.failedFuture(new NoGpuAvailableException(
                    "requested " + count + " GPUs, this appliance has " + gpus.size()));
        }
        if (owner != null && ownerSlots > 0 && count > ownerSlots) {
            return CompletableFuture.failedFuture(new NoGpuAvailableException(
                    "requested " + count + " GPUs, more than the " + ownerSlots + " GPU slot(s) of the share of " + owner));
        }
        Waiter w = new Waiter(count, owner, ownerSlots, List.copyOf(preferredUuids));
        List<Grant> grants;
        synchronized (this) {
            queue.addLast(w);
            grants = drainQueue();
        }
        complete(grants);
        if (w.future.isDone()) return w.future;
        w.timeout = timer.schedule(() -> expire(w), config.queueTimeout().toNanos(), TimeUnit.NANOSECONDS);
        // withdraw from the queue when the caller cancels (e.g. the client hung up while waiting)
        w.future.whenComplete((b, e) -> {
            if (w.future.isCancelled()) withdraw(w);
        });
        return w.future;
    }

    /** Frees the binding's slots and serves queued requests that now fit. Safe to call twice. */
    public void release(GpuBinding binding) {
        if (binding.isEmpty() || !binding.markReleased()) return;
        List<Grant> grants;
        synchronized (this) {
            for (GpuInfo g : binding.gpus()) activeSessions[g.index()]--;
            if (binding.owner() != null)
                heldByOwner.computeIfPresent(binding.owner(), (o, n) -> n <= binding.gpus().size() ? null : n - binding.gpus().size());
            grants = drainQueue();
        }
        complete(grants);
    }

    /** Active sessions per GPU index, for /status. */
    public synchronized int[] activeSessionsPerGpu() {
        return activeSessions.clone();
    }

    public synchronized int queuedRequests() {
        return queue.size();
    }

    private void expire(Waiter w) {
        String message;
        List<Grant> grants;
        synchronized (this) {
            if (!queue.contains(w)) return;
            message = timeoutMessage(w);
            queue.remove(w);
            // the head leaving may let the requests behind it through
            grants = drainQueue();
        }
        w.future.completeExceptionally(new NoGpuAvailableException(message));
        complete(grants);
    }

    private void withdraw(Waiter w) {
        List<Grant> grants;
        synchronized (this) {
            if (!queue.remove(w)) return;
            grants = drainQueue();
        }
        if (w.timeout != null) w.timeout.cancel(false);
        complete(grants);
    }

    /** Slots the owner's sessions hold now (for /status and the tests). */
    public synchronized int heldBy(String owner) {
        return heldByOwner.getOrDefault(owner, 0);
    }

    private boolean overShare(Waiter w) {
        return w.owner != null && w.ownerSlots > 0 && heldByOwner.getOrDefault(w.owner, 0) + w.count > w.ownerSlots;
    }

    /**
     * Places queued requests in order. A request past its owner's share is passed over (it waits for its
     * own owner's sessions to end, which no one else's request can hasten); among the others the order is
     * strict: the first that does not fit stops the drain.
     */
    private List<Grant> drainQueue() {
        List<Grant> grants = new ArrayList<>();
        for (java.util.Iterator<Waiter> it = queue.iterator(); it.hasNext(); ) {
            Waiter w = it.next();
            if (overShare(w)) continue;
            GpuBinding b = tryPlace(w.count, w.owner, w.preferred);
            if (b == null) break;
            it.remove();
            if (w.owner != null) heldByOwner.merge(w.owner, w.count, Integer::sum);
            grants.add(new Grant(w, b));
        }
        return grants;
    }

    /** Completes futures outside the lock: their callbacks are the caller's code. */
    private void complete(List<Grant> grants) {
        for (Grant g : grants) {
            if (g.waiter.timeout != null) g.waiter.timeout.cancel(false);
            if (!g.waiter.future.complete(g.binding)) {
                release(g.binding); // cancelled meanwhile: give the slots back
            }
        }
    }

    /** Takes slots on {@code count} distinct GPUs if that many have room; null otherwise. */
    private GpuBinding tryPlace(int count, String owner, List<String> preferred) {
        List<PlacementPolicy.GpuLoad> free = new ArrayList<>();
        for (GpuInfo g : gpus) {
            int i = g.index();
            if (activeSessions[i] < config.maxSessionsPerGpu()) {
                long used = inventory.usage(g.uuid()).map(GpuUsage::memoryUsedBytes).orElse(-1L);
                free.add(new PlacementPolicy.GpuLoad(i, activeSessions[i], used, lastAssignedSeq[i]));
            }
        }
        if (free.size() < count) return null;
        Comparator<PlacementPolicy.GpuLoad> order = config.policy().order();
        if (!preferred.isEmpty()) {
            order = Comparator.comparing((PlacementPolicy.GpuLoad l) -> !preferred.contains(gpus.get(l.index()).uuid()))
                    .thenComparing(order);
        }
        free.sort(order);
        List<GpuInfo> chosen = new ArrayList<>();
        for (PlacementPolicy.GpuLoad l : free.subList(0, count)) {
            activeSessions[l.index()]++;
            lastAssignedSeq[l.index()] = ++assignSeq;
            chosen.add(gpuByIndex(l.index()));
        }
        chosen.sort(Comparator.comparingInt(GpuInfo::index));
        return new GpuBinding(chosen, owner);
    }

    private GpuInfo gpuByIndex(int index) {
        for (GpuInfo g : gpus) {
            if (g.index() == index) return g;
        }
        throw new IllegalStateException("no GPU with index " + index);
    }

    private String timeoutMessage(Waiter w) {
        if (overShare(w)) {
            return "no GPU within " + format(config.queueTimeout()) + ": the sessions of " + w.owner + " hold "
                    + heldByOwner.getOrDefault(w.owner, 0) + " of the " + w.ownerSlots + " GPU slot(s) of its share";
        }
        int atLimit = 0;
        for (int n : activeSessions) {
            if (n >= config.maxSessionsPerGpu()) atLimit++;
        }
        int ahead = 0;
        for (Waiter q : queue) {
            if (q == w) break;
            ahead++;
        }
        StringBuilder m = new StringBuilder("no ")
                .append(w.count == 1 ? "GPU" : w.count + " distinct GPUs")
                .append(" free within ").append(format(config.queueTimeout())).append(": ")
                .append(gpus.size()).append(" GPU(s), ")
                .append(atLimit == gpus.size() ? "each" : atLimit + "")
                .append(" at its limit of ").append(config.maxSessionsPerGpu()).append(" sessions");
        if (ahead > 0) m.append(", ").append(ahead).append(" request(s) queued ahead");
        return m.toString();
    }

    static String format(Duration d) {
        long ms = d.toMillis();
        return ms % 1000 == 0 ? (ms / 1000) + " s" : ms + " ms";
    }

    private static final class Waiter {
        final int count;
        final String owner;
        final int ownerSlots;
        final List<String> preferred;
        final CompletableFuture<GpuBinding> future = new CompletableFuture<>();
        volatile ScheduledFuture<?> timeout;

        Waiter(int count, String owner, int ownerSlots, List<String> preferred) {
            this.count = count;
            this.preferred = preferred;
            this.owner = owner;
            this.ownerSlots = ownerSlots;
        }
    }

    private record Grant(Waiter waiter, GpuBinding binding) {}
}
