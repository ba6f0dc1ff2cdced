package io.vmcuda.appliance.session;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.channel.Channel;
import io.netty.channel.embedded.EmbeddedChannel;
import io.vmcuda.appliance.auth.Tenant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * The bookkeeping behind the per-tenant connection cap, with a made-up socket table and clock: which events
 * free a connection's place, that a connection in a worker stays counted until the table shows it closed, and
 * that a tenant at its cap reads the table at most once per {@link TenantConnections#RESCAN_NANOS}.
 */
class TenantConnectionsTest {
    /** A socket table whose sockets close when the test says so. */
    private static final class FakeTable implements SocketTable {
        long nextInode = 1000;
        final Set<Long> closed = new HashSet<>();
        int scans;

        @Override
        public long inodeOf(Channel ch) {
            return nextInode++;
        }

        @Override
        public Set<Long> closed(Collection<Long> inodes) {
            scans++;
            Set<Long> out = new HashSet<>(inodes);
            out.retainAll(closed);
            return out;
        }
    }

    private final FakeTable table = new FakeTable();
    private final AtomicLong now = new AtomicLong(1_000_000_000L);
    private final TenantConnections connections = new TenantConnections(2, table, Runnable::run, now::get);

    private static Tenant tenant(String name, int maxConnections) {
        return new Tenant(name, new byte[32], 0, 0, 0, List.of(), 0, maxConnections);
    }

    /** Null when admitted, else the refusal. */
    private String admit(Tenant t, Channel ch) {
        return connections.admit(t, ch).join();
    }

    /** What SessionManager does to a connection it hands to the worker: after it, the daemon's copy closes. */
    private static void handOver(Channel ch) {
        ConnectionSlot.of(ch).handingOver();
        ch.close();
    }

    @Test
    void connectionsTheDaemonHoldsAreFreedWhenTheyClose() {
        Tenant t = tenant("t", 3);
        List<EmbeddedChannel> chs = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            chs.add(new EmbeddedChannel());
            assertNull(admit(t, chs.get(i)));
        }
        String refusal = admit(t, new EmbeddedChannel());
        assertTrue(refusal.startsWith("tenant 't' has reached its limit of 3 open connections")
                && refusal.endsWith("(one per CUDA-calling thread; appliance setting tenant.t.max_connections)"), refusal);
        assertEquals(0, table.scans, "nothing in a worker: nothing to look up");
        chs.get(0).close(); // refused, or the client hung up while queued
        assertEquals(2, connections.open(t));
        assertNull(admit(t, new EmbeddedChannel()));
    }

    @Test
    void connectionsInAWorkerCountUntilTheSocketTableShowsThemClosed() {
        Tenant t = tenant("t", 3);
        List<EmbeddedChannel> chs = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            chs.add(new EmbeddedChannel());
            assertNull(admit(t, chs.get(i)));
            handOver(chs.get(i));
        }
        assertEquals(3, connections.open(t), "the daemon's copies are closed, the connections are not");
        assertTrue(admit(t, new EmbeddedChannel()) != null);
        assertEquals(1, table.scans, "at the cap the table is read");

        table.closed.add(1000L); // the first connection's client thread ended and the worker closed it
        assertTrue(admit(t, new EmbeddedChannel()) != null, "too soon after the last reading");
        assertEquals(1, table.scans, "a tenant hammering at its cap does not make the daemon read the table each time");
        now.addAndGet(TenantConnections.RESCAN_NANOS);
        assertNull(admit(t, new EmbeddedChannel()));
        assertEquals(2, table.scans);
        assertEquals(3, connections.open(t));
    }

    @Test
    void theSessionsEndAndAFailedHandOffFreeTheirConnections() {
        Tenant t = tenant("t", 2);
        EmbeddedChannel a = new EmbeddedChannel(), b = new EmbeddedChannel();
        assertNull(admit(t, a));
        assertNull(admit(t, b));
        handOver(a);
        ConnectionSlot.of(a).release(); // the session ended: its worker and all it held are gone
        ConnectionSlot.of(a).release(); // a later scan or a second end frees nothing twice
        assertEquals(1, connections.open(t));
        ConnectionSlot slot = ConnectionSlot.of(b);
        slot.handingOver();
        slot.release(); // the hand-off failed: the worker never got it...
        b.close(); // ...and the daemon's copy closes after that
        assertEquals(0, connections.open(t));
    }

    @Test
    void connectionsWithoutAKnownSocketWaitForTheirSessionsEnd() {
        SocketTable unknown = new SocketTable() {
            @Override
            public long inodeOf(Channel ch) {
                return -1;
            }

            @Override
            public Set<Long> closed(Collection<Long> inodes) {
                throw new AssertionError("nothing to look up");
            }
        };
        TenantConnections c = new TenantConnections(1, unknown, Runnable::run, now::get);
        EmbeddedChannel a = new EmbeddedChannel();
        assertNull(c.admit(Tenant.ANONYMOUS, a).join());
        handOver(a);
        String refusal = c.admit(Tenant.ANONYMOUS, new EmbeddedChannel()).join();
        assertTrue(refusal.startsWith("the clients of this appliance have reached their limit of 1 open connections")
                && refusal.contains("control.tenant_max_connections"), refusal);
        ConnectionSlot.of(a).release();
        assertNull(c.admit(Tenant.ANONYMOUS, new EmbeddedChannel()).join());
    }

    @Test
    void eachTenantHasItsOwnCountAndZeroMeansNoCap() {
        Tenant t = tenant("t", Tenant.DEFAULT_CONNECTIONS), u = tenant("u", Tenant.DEFAULT_CONNECTIONS);
        Tenant free = tenant("free", 0);
        assertNull(admit(t, new EmbeddedChannel()));
        assertNull(admit(t, new EmbeddedChannel()));
        String refusal = admit(t, new EmbeddedChannel());
        assertTrue(refusal.contains("limit of 2 open connections") && refusal.contains("control.tenant_max_connections"),
                "the default applies: " + refusal);
        assertNull(admit(u, new EmbeddedChannel()), "another tenant is not affected");
        for (int i = 0; i < 100; i++) assertNull(admit(free, new EmbeddedChannel()));
        assertEquals(0, connections.open(free), "no cap, nothing counted");
    }

    @Test
    void theProcTableParsesAndTreatsAnUnknownSocketAsClosed() throws Exception {
        String line = "   3: 0100007F:A4B1 0100007F:1F90 01 00000000:00000000 00:00000000 00000000  1000        0 4242 1 "
                + "0000000000000000 20 4 30 10 -1";
        assertEquals(4242, ProcSocketTable.column(line, 9));
        assertEquals(-1, ProcSocketTable.column("  sl  local_address", 9));
        ProcSocketTable proc = new ProcSocketTable();
        assertEquals(-1, proc.inodeOf(new EmbeddedChannel()), "not a socket the kernel knows");
        assertEquals(Set.of(Long.MAX_VALUE - 7), proc.closed(List.of(Long.MAX_VALUE - 7)));
    }
}
