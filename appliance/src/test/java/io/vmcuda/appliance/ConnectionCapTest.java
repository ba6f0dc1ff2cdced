package io.vmcuda.appliance;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.vmcuda.appliance.auth.Authenticator;
import io.vmcuda.appliance.auth.Tenant;
import io.vmcuda.appliance.session.TenantConnections;
import io.vmcuda.protocol.Wire;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The per-tenant cap on open connections (tenant.NAME.max_connections, default control.tenant_max_connections):
 * NEW and JOIN connections count from their HELLO until they close, also after the daemon handed them to the
 * worker; one past the cap is REFUSED with a message naming the cap, logged once per burst, and neither the
 * tenant's open session nor another tenant notices.
 */
@Timeout(120)
class ConnectionCapTest {
    private static final String TOKEN_A = Authenticator.generateToken();
    private static final String TOKEN_B = Authenticator.generateToken();
    private static final String CAP_MESSAGE = "tenant 'alice' has reached its limit of 4 open connections";
    private static NativeFixtures fixtures;
    private static byte[] binary;

    @TempDir
    Path state;

    @BeforeAll
    static void build() throws Exception {
        fixtures = NativeFixtures.get();
        binary = Files.readAllBytes(fixtures.fakeWorker);
    }

    private static ProtocolClient.Reply newSession(ProtocolClient c, String token) throws Exception {
        c.sendNewHello(binary, "cap-app", token, 1);
        ProtocolClient.Reply r = c.readReply();
        if (r.status() == Wire.HELLO_SEND_BINARY) {
            c.upload(binary, 65536);
            r = c.readReply();
        }
        return r;
    }

    /** A JOIN of {@code session} that the worker took over (it sent its MANIFEST), or null when refused. */
    private static ProtocolClient join(DaemonHarness d, ProtocolClient.Reply session, String token,
                                       List<String> refusals) throws Exception {
        ProtocolClient c = d.connect();
        c.sendJoinHello(session.sessionId(), session.key(), token);
        ProtocolClient.Reply r = c.readReply();
        if (r.status() != Wire.HELLO_READY) {
            assertEquals(Wire.HELLO_REFUSED, r.status());
            assertTrue(c.peerClosed(), "a refused connection is closed");
            c.close();
            refusals.add(r.message());
            return null;
        }
        assertEquals(Wire.TYPE_MANIFEST, c.readFrame().type(), "the worker serves the JOIN");
        return c;
    }

    /** The fake worker echoes what a client sends: the connection is served. */
    private static void assertServed(ProtocolClient c) throws Exception {
        c.sendRaw("ping".getBytes(StandardCharsets.US_ASCII));
        assertEquals("ping", ProtocolClient.text(c.readExactly(4)));
    }

    @Test
    void aTenantAtItsCapIsRefusedWithoutHarmToItsSessionOrOthers() throws Exception {
        CapturedLog log = new CapturedLog(TenantConnections.class);
        List<ProtocolClient> open = new ArrayList<>();
        try (DaemonHarness d = new DaemonHarness(state, fixtures.workerLibDir(), TestInventory.gpus(2), Map.of(
                "tenant.alice.token_sha256", Authenticator.hashToken(TOKEN_A),
                "tenant.alice.max_connections", "4",
                "tenant.bob.token_sha256", Authenticator.hashToken(TOKEN_B)))) {
            // alice: one session, NEW + 3 JOINs = her cap of 4, all handed over to the worker
            ProtocolClient first = d.connect();
            open.add(first);
            ProtocolClient.Reply session = newSession(first, TOKEN_A);
            assertEquals(Wire.HELLO_READY, session.status(), session.message());
            assertEquals(Wire.TYPE_MANIFEST, first.readFrame().type());
            List<String> refusals = new ArrayList<>();
            for (int i = 0; i < 3; i++) {
                ProtocolClient j = join(d, session, TOKEN_A, refusals);
                assertTrue(j != null, "JOIN " + (i + 1) + " is within the cap: " + refusals);
                open.add(j);
            }

            // the fifth connection is refused, JOIN or NEW alike, with a message the client prints
            assertEquals(null, join(d, session, TOKEN_A, refusals));
            try (ProtocolClient c = d.connect()) {
                ProtocolClient.Reply r = newSession(c, TOKEN_A);
                assertEquals(Wire.HELLO_REFUSED, r.status());
                refusals.add(r.message());
            }
            assertEquals(2, refusals.size());
            for (String m : refusals) {
                assertTrue(m.startsWith(CAP_MESSAGE) && m.contains("appliance setting tenant.alice.max_connections"), m);
            }
            assertEquals(1, warnings(log).size(), "two refusals in a row, one log line: " + warnings(log));

            // alice's open connections are still served; bob is not affected
            for (ProtocolClient c : open) assertServed(c);
            try (ProtocolClient b = d.connect()) {
                ProtocolClient.Reply r = newSession(b, TOKEN_B);
                assertEquals(Wire.HELLO_READY, r.status(), r.message());
                assertEquals(Wire.TYPE_MANIFEST, b.readFrame().type());
                ProtocolClient bj = join(d, r, TOKEN_B, refusals);
                assertTrue(bj != null, "bob may join his session: " + refusals);
                assertServed(bj);
                bj.close();
            }

            // alice's threads end one after the other: each closes its JOIN (in the worker, where the daemon does
            // not see it), and she may connect again once the worker has closed its copy too. One at a time: after
            // two clients close at once, fake_worker.c reads a stale pollfd entry for the next client it gets and,
            // its descriptor being non-blocking, drops it.
            int before = refusals.size();
            for (int round = 0; round < 2; round++) {
                open.remove(1).close();
                ProtocolClient again;
                while ((again = join(d, session, TOKEN_A, refusals)) == null) Thread.sleep(20);
                open.add(again);
                assertServed(again);
            }
            for (String m : refusals.subList(before, refusals.size())) assertTrue(m.startsWith(CAP_MESSAGE), m);
            for (ProtocolClient c : open) assertServed(c);
            // four again: the next is refused
            assertEquals(null, join(d, session, TOKEN_A, refusals));

            // once the session has ended, every one of its connections is free
            for (ProtocolClient c : open) c.close();
            open.clear();
            d.awaitBody("/metrics", m -> m.contains("vmcuda_sessions_active 0.0\n"));
            for (int i = 0; i < 4; i++) {
                ProtocolClient c = d.connect();
                open.add(c);
                ProtocolClient.Reply r = newSession(c, TOKEN_A);
                assertEquals(Wire.HELLO_READY, r.status(), "session " + i + ": " + r.message());
            }
        } finally {
            for (ProtocolClient c : open) c.close();
            log.close();
        }
        // each burst of refusals is logged once when it starts, naming the tenant and its cap, and once when it ends
        List<String> warnings = warnings(log);
        assertTrue(!warnings.isEmpty() && warnings.stream().allMatch(m -> m.startsWith(
                "connection cap reached by tenant 'alice': 4 open connections (tenant.alice.max_connections)")), warnings.toString());
        long ends = log.records().stream().filter(r -> r.getMessage().startsWith(
                "connection cap no longer reached by tenant 'alice' (4 open connections)")).count();
        assertEquals(warnings.size(), ends, "every burst ended with a connection admitted: " + warnings);
    }

    private static List<String> warnings(CapturedLog log) {
        return log.records().stream().filter(r -> r.getLevel() == Level.WARNING).map(LogRecord::getMessage).toList();
    }

    /** Without tenants every client is the same "anonymous" tenant: control.tenant_max_connections caps them all. */
    @Test
    void anApplianceWithoutTenantsCapsAllItsClientsTogether() throws Exception {
        try (DaemonHarness d = new DaemonHarness(state, fixtures.workerLibDir(), TestInventory.gpus(1), Map.of(
                "control.tenant_max_connections", "2"))) {
            try (ProtocolClient first = d.connect()) {
                first.sendNewHello(binary, "open-app");
                ProtocolClient.Reply session = first.readReply();
                if (session.status() == Wire.HELLO_SEND_BINARY) {
                    first.upload(binary, 65536);
                    session = first.readReply();
                }
                assertEquals(Wire.HELLO_READY, session.status(), session.message());
                assertEquals(Wire.TYPE_MANIFEST, first.readFrame().type());
                try (ProtocolClient j = d.connect()) {
                    j.sendJoinHello(session.sessionId(), session.key());
                    assertEquals(Wire.HELLO_READY, j.readReply().status());
                    try (ProtocolClient over = d.connect()) {
                        over.sendJoinHello(session.sessionId(), session.key());
                        ProtocolClient.Reply r = over.readReply();
                        assertEquals(Wire.HELLO_REFUSED, r.status());
                        assertTrue(r.message().startsWith("the clients of this appliance have reached their limit of 2 "
                                + "open connections") && r.message().contains("control.tenant_max_connections"), r.message());
                    }
                }
            }
        }
    }

    @Test
    void theCapIsConfiguredPerTenantWithAnApplianceWideDefault() {
        ApplianceConfig base = ApplianceConfig.defaultsOnly();
        assertEquals(256, base.tenantMaxConnections(), "built-in default");
        ApplianceConfig c = base.with(Map.of("control.tenant_max_connections", "64",
                "tenant.a.token_sha256", "1".repeat(64), "tenant.a.max_connections", "8",
                "tenant.b.token_sha256", "2".repeat(64),
                "tenant.c.token_sha256", "3".repeat(64), "tenant.c.max_connections", "0"));
        List<Tenant> t = c.tenants();
        assertEquals(8, t.get(0).connectionCap(c.tenantMaxConnections()));
        assertEquals(64, t.get(1).connectionCap(c.tenantMaxConnections()), "unset: the default");
        assertEquals(0, t.get(2).connectionCap(c.tenantMaxConnections()), "0: no cap");
        assertEquals(64, Tenant.ANONYMOUS.connectionCap(c.tenantMaxConnections()), "no tenants: the default caps all");
        assertThrows(IllegalArgumentException.class, () -> base.with(Map.of(
                "tenant.a.token_sha256", "1".repeat(64), "tenant.a.max_connections", "-1")));
        assertThrows(IllegalArgumentException.class, () -> base.with(Map.of(
                "tenant.a.token_sha256", "1".repeat(64), "tenant.a.max_connections", "many")));
        assertThrows(IllegalArgumentException.class, () -> base.with(Map.of("control.tenant_max_connections", "-5")));
    }

    /** The default key is accepted in a config file like any built-in key (it is not in the properties file). */
    @Test
    void theDefaultKeyIsAKnownConfigKey() throws Exception {
        Path f = state.resolve("vmcudad.properties");
        Files.writeString(f, "control.tenant_max_connections = 1024\n");
        assertEquals(1024, ApplianceConfig.load(f).tenantMaxConnections());
    }
}
