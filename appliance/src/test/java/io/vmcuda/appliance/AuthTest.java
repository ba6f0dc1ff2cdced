package io.vmcuda.appliance;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.vmcuda.appliance.auth.Authenticator;
import io.vmcuda.protocol.Wire;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Who may connect: tenants and tokens (stored as SHA-256), REFUSED "bad token" for a missing or wrong
 * token (logged and counted in vmcuda_auth_failures_total), per-tenant caps on GPUs per session and
 * concurrent sessions, JOIN only with the session's own tenant, and no open appliance on a non-loopback
 * address without --insecure.
 */
@Timeout(120)
class AuthTest {
    private static final String TOKEN_A = Authenticator.generateToken();
    private static final String TOKEN_B = Authenticator.generateToken();
    private static NativeFixtures fixtures;
    private static byte[] binary;

    @TempDir
    Path state;

    @BeforeAll
    static void build() throws Exception {
        fixtures = NativeFixtures.get();
        binary = Files.readAllBytes(fixtures.fakeWorker);
    }

    private DaemonHarness daemon() throws Exception {
        return new DaemonHarness(state, fixtures.workerLibDir(), TestInventory.gpus(4), Map.of(
                "tenant.alice.token_sha256", Authenticator.hashToken(TOKEN_A),
                "tenant.alice.max_sessions", "1",
                "tenant.alice.max_gpus", "2",
                "tenant.alice.max_memory_bytes", "1000000",
                "tenant.bob.token_sha256", Authenticator.hashToken(TOKEN_B).toUpperCase()));
    }

    private static ProtocolClient.Reply hello(DaemonHarness d, ProtocolClient c, String token, int gpus) throws Exception {
        c.sendNewHello(binary, "auth-app", token, gpus);
        ProtocolClient.Reply r = c.readReply();
        if (r.status() == Wire.HELLO_SEND_BINARY) {
            c.upload(binary, 65536);
            r = c.readReply();
        }
        return r;
    }

    @Test
    void missingOrWrongTokenIsRefusedAndCounted() throws Exception {
        try (DaemonHarness d = daemon()) {
            for (String bad : new String[] {"", "not-a-token", TOKEN_A + "x", TOKEN_A.substring(1)}) {
                try (ProtocolClient c = d.connect()) {
                    ProtocolClient.Reply r = hello(d, c, bad, 1);
                    assertEquals(Wire.HELLO_REFUSED, r.status());
                    assertEquals("bad token", r.message());
                    assertTrue(c.peerClosed());
                }
            }
            try (ProtocolClient c = d.connect()) { // a JOIN without a valid token as well
                c.sendJoinHello(1, new byte[32], "nope");
                assertEquals("bad token", c.readReply().message());
            }
            String metrics = d.body("/metrics");
            assertTrue(metrics.contains("vmcuda_auth_failures_total 5\n"), metrics);
        }
    }

    @Test
    void tenantCapsAreEnforcedAtHello() throws Exception {
        try (DaemonHarness d = daemon()) {
            try (ProtocolClient c = d.connect()) {
                ProtocolClient.Reply r = hello(d, c, TOKEN_A, 3);
                assertEquals(Wire.HELLO_REFUSED, r.status());
                assertTrue(r.message().contains("at most 2 GPU(s) per session"), r.message());
            }
            try (ProtocolClient first = d.connect()) {
                ProtocolClient.Reply ready = hello(d, first, TOKEN_A, 2);
                assertEquals(Wire.HELLO_READY, ready.status(), ready.message());
                assertEquals(Wire.TYPE_MANIFEST, first.readFrame().type());
                // alice's second concurrent session is over her cap; bob is not affected
                try (ProtocolClient second = d.connect()) {
                    ProtocolClient.Reply r = hello(d, second, TOKEN_A, 1);
                    assertEquals(Wire.HELLO_REFUSED, r.status());
                    assertTrue(r.message().contains("limit of 1 concurrent session"), r.message());
                }
                try (ProtocolClient other = d.connect()) {
                    ProtocolClient.Reply r = hello(d, other, TOKEN_B, 1);
                    assertEquals(Wire.HELLO_READY, r.status(), r.message());
                    other.readFrame();
                }
                // bob cannot join alice's session even with its key; alice can
                try (ProtocolClient j = d.connect()) {
                    j.sendJoinHello(ready.sessionId(), ready.key(), TOKEN_B);
                    assertEquals(Wire.HELLO_REFUSED, j.readReply().status());
                }
                try (ProtocolClient j = d.connect()) {
                    j.sendJoinHello(ready.sessionId(), ready.key(), TOKEN_A);
                    assertEquals(Wire.HELLO_READY, j.readReply().status());
                }
                // the memory cap travels to the worker as VMCUDA_MEMORY_QUOTA (the fake worker logs its env)
            }
            // once alice's session has ended she may open another
            d.awaitBody("/metrics", m -> m.contains("vmcuda_sessions_active 0\n"));
            try (ProtocolClient again = d.connect()) {
                assertEquals(Wire.HELLO_READY, hello(d, again, TOKEN_A, 1).status());
            }
            String records = Files.readString(state.resolve("sessions.jsonl"));
            assertTrue(records.contains("\"tenant\":\"alice\"") && records.contains("\"tenant\":\"bob\""), records);
        }
    }

    @Test
    void openApplianceOnlyOnLoopbackOrWithInsecure() throws Exception {
        InetSocketAddress all = new InetSocketAddress("0.0.0.0", 0);
        InetSocketAddress lo = new InetSocketAddress("127.0.0.1", 0);
        ApplianceConfig open = ApplianceConfig.defaultsOnly().with(Map.of("worker.sandbox", "false"));
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> Daemon.start(
                new DaemonOptions(all, lo, state, null, state, false), open, TestInventory.none()));
        assertTrue(e.getMessage().contains("without tenant tokens"), e.getMessage());
        try (Daemon d = Daemon.start(new DaemonOptions(all, lo, state, null, state, true), open, TestInventory.none())) {
            assertTrue(d.controlAddress().getPort() > 0);
        }
        ApplianceConfig withTenant = open.with(Map.of("tenant.t.token_sha256", Authenticator.hashToken("x")));
        try (Daemon d = Daemon.start(new DaemonOptions(all, lo, state, null, state, false), withTenant,
                TestInventory.none())) {
            assertTrue(d.controlAddress().getPort() > 0);
        }
    }

    @Test
    void tenantConfigErrorsStopTheStart() {
        ApplianceConfig base = ApplianceConfig.defaultsOnly();
        assertThrows(IllegalArgumentException.class, () -> base.with(Map.of("tenant.a.max_gpus", "1")));
        assertThrows(IllegalArgumentException.class, () -> base.with(Map.of("tenant.a.token_sha256", "abc")));
        assertThrows(IllegalArgumentException.class, () -> base.with(Map.of("tenant.a b.token_sha256", "0".repeat(64))));
        assertThrows(IllegalArgumentException.class, () -> base.with(Map.of("tenant.a.colour", "red")));
        assertThrows(IllegalArgumentException.class, () -> base.with(Map.of(
                "tenant.a.token_sha256", "0".repeat(64), "tenant.b.token_sha256", "0".repeat(64))));
        assertThrows(IllegalArgumentException.class, () -> base.with(Map.of(
                "tenant.a.token_sha256", "0".repeat(64), "tenant.a.max_sessions", "-1")));
        assertThrows(IllegalArgumentException.class, () -> base.with(Map.of("session.idle_release_minutes", "soon")));
        assertThrows(IllegalArgumentException.class, () -> base.with(Map.of("worker.sandbox", "maybe")));
        assertEquals("0.05", base.with(Map.of("session.idle_release_minutes", "0.05")).idleReleaseMinutes());
        assertEquals(2, base.with(Map.of("tenant.a.token_sha256", "1".repeat(64), "tenant.b.token_sha256",
                "2".repeat(64), "tenant.b.max_memory_bytes", "4096")).tenants().size());
    }

    @Test
    void tokensHashAndCompare() {
        Authenticator a = new Authenticator(ApplianceConfig.defaultsOnly()
                .with(Map.of("tenant.a.token_sha256", Authenticator.hashToken("secret"))).tenants());
        assertEquals("a", a.authenticate("secret".getBytes()).name());
        assertEquals(null, a.authenticate("secreT".getBytes()));
        assertEquals(null, a.authenticate(new byte[0]));
        assertEquals("2bb80d537b1da3e38bd30361aa855686bde0eacd7162fef6a25fe97bf527a25b", Authenticator.hashToken("secret"));
        assertEquals(64, Authenticator.generateToken().length());
    }
}
