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
            assertTrue(metrics.contains("vmcuda_auth_failures_total 5.0\n"), metrics);
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
            d.awaitBody("/metrics", m -> m.contains("vmcuda_sessions_active 0.0\n"));
            try (ProtocolClient again = d.connect()) {
                assertEquals(Wire.HELLO_READY, hello(d, again, TOKEN_A, 1).status());
            }
            String records = d.awaitRecords(r -> r.contains("\"tenant\":\"alice\"") && r.contains("\"tenant\":\"bob\""));
            assertTrue(records.contains("\"tenant\":\"alice\"") && records.contains("\"tenant\":\"bob\""), records);
        }
    }

    @Test
    void withTenantsTheAdminPortNeedsTheOperatorToken() throws Exception {
        try (DaemonHarness d = daemon()) {
            for (String page : new String[] {"/status", "/status?format=table", "/metrics"}) {
                assertEquals(401, d.get(page, null).statusCode(), page + " without a token");
                assertEquals(403, d.get(page, "not-the-operator").statusCode(), page + " with a wrong token");
                // a tenant's token is not the operator's: tenants must not see each other's sessions
                assertEquals(403, d.get(page, TOKEN_A).statusCode(), page + " with a tenant's token");
                assertEquals(200, d.get(page).statusCode(), page + " with the operator token");
            }
            assertTrue(d.get("/status", null).body().contains("Authorization: Bearer"));
            assertEquals("ok\n", d.get("/health", null).body(), "/health is open and says nothing else");
        }
        // tenants but no operator token: everything except /health is closed, and says how to open it
        Map<String, String> noAdmin = Map.of("tenant.alice.token_sha256", Authenticator.hashToken(TOKEN_A),
                "admin.token_sha256", "");
        try (DaemonHarness d = new DaemonHarness(state, fixtures.workerLibDir(), TestInventory.none(), noAdmin)) {
            var r = d.get("/status");
            assertEquals(403, r.statusCode());
            assertTrue(r.body().contains("admin.token_sha256"), r.body());
            assertEquals(200, d.get("/health", null).statusCode());
        }
        // the operator token may not double as a tenant's
        assertThrows(IllegalStateException.class, () -> new DaemonHarness(state, fixtures.workerLibDir(),
                TestInventory.none(), Map.of("tenant.alice.token_sha256", Authenticator.hashToken(TOKEN_A),
                        "admin.token_sha256", Authenticator.hashToken(TOKEN_A))).close());
        // no tenants (the demo's open loopback appliance): the admin port is open too
        try (DaemonHarness d = new DaemonHarness(state, fixtures.workerLibDir(), TestInventory.none(), Map.of())) {
            assertEquals(200, d.get("/status", null).statusCode());
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

    /** One tenant cannot hold every GPU slot once there is another: each gets a share (default 50 %). */
    @Test
    void gpuSharesDefaultToHalfWhenTenantsShare() {
        ApplianceConfig base = ApplianceConfig.defaultsOnly();
        assertEquals(100, base.tenantGpuSharePercent(), "nobody to share with");
        assertEquals(100, base.with(Map.of("tenant.a.token_sha256", "1".repeat(64))).tenantGpuSharePercent());
        ApplianceConfig two = base.with(Map.of("tenant.a.token_sha256", "1".repeat(64), "tenant.b.token_sha256",
                "2".repeat(64), "tenant.b.gpu_share", "75"));
        assertEquals(50, two.tenantGpuSharePercent());
        io.vmcuda.appliance.auth.Tenant a = two.tenants().get(0), b = two.tenants().get(1);
        // 2 GPUs x 16 sessions per GPU = 32 slots
        assertEquals(16, a.gpuSlots(32, two.tenantGpuSharePercent()));
        assertEquals(24, b.gpuSlots(32, two.tenantGpuSharePercent()));
        assertEquals(1, a.gpuSlots(1, 50), "at least one slot");
        assertEquals(0, io.vmcuda.appliance.auth.Tenant.ANONYMOUS.gpuSlots(32, 50), "the open appliance has no cap");
        assertThrows(IllegalArgumentException.class, () -> base.with(Map.of(
                "tenant.a.token_sha256", "0".repeat(64), "tenant.a.gpu_share", "101")));
        assertThrows(IllegalArgumentException.class, () -> base.with(Map.of("scheduler.tenant_gpu_share", "0",
                "tenant.a.token_sha256", "1".repeat(64), "tenant.b.token_sha256", "2".repeat(64))).tenantGpuSharePercent());
    }

    @Test
    void proofsAreCheckedAgainstTheChallenge() {
        Authenticator a = new Authenticator(ApplianceConfig.defaultsOnly()
                .with(Map.of("tenant.a.token_sha256", Authenticator.hashToken("secret"))).tenants());
        byte[] challenge = new byte[32], other = new byte[32];
        other[0] = 1;
        byte[] signed = "hello body".getBytes();
        byte[] key = java.util.HexFormat.of().parseHex(Authenticator.hashToken("secret"));
        byte[] proof = Authenticator.proof(key, challenge, signed);
        assertEquals("a", a.authenticate(challenge, signed, proof).name());
        // a recorded HELLO on another connection (another challenge), or altered, proves nothing
        assertEquals(null, a.authenticate(other, signed, proof));
        assertEquals(null, a.authenticate(challenge, "hello bodY".getBytes(), proof));
        byte[] wrong = java.util.HexFormat.of().parseHex(Authenticator.hashToken("secreT"));
        assertEquals(null, a.authenticate(challenge, signed, Authenticator.proof(wrong, challenge, signed)));
        assertEquals(null, a.authenticate(challenge, signed, new byte[32]), "no token");
        // RFC 4231 test case 2: the same HMAC the C client computes (vmc_hmac_sha256)
        assertEquals("5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843",
                java.util.HexFormat.of().formatHex(Authenticator.proof("Jefe".getBytes(), "what do ya want ".getBytes(),
                        "for nothing?".getBytes())));
        assertEquals("2bb80d537b1da3e38bd30361aa855686bde0eacd7162fef6a25fe97bf527a25b", Authenticator.hashToken("secret"));
        assertEquals(64, Authenticator.generateToken().length());
        for (int i = 0; i < 1000; i++) assertEquals(null, Authenticator.weakness(Authenticator.generateToken()));
        assertTrue(Authenticator.weakness("hunter2") != null);
        assertTrue(Authenticator.weakness("a".repeat(40)) != null);
    }

    /** A HELLO captured on the wire, sent again on a new connection, is refused: its proof was for another challenge. */
    @Test
    void aRecordedHelloCannotBeReplayed() throws Exception {
        try (DaemonHarness d = daemon()) {
            byte[] recorded;
            try (ProtocolClient c = d.connect()) {
                recorded = ProtocolClient.hello(Wire.PROTO_VERSION, Wire.ROLE_NEW, binary.length,
                        ProtocolClient.sha256(binary), 1, 0, new byte[32], "victim", TOKEN_B, c.challenge);
                c.sendFrame(Wire.TYPE_HELLO, recorded);
                assertEquals(Wire.HELLO_SEND_BINARY, c.readReply().status(), "the original is accepted");
            }
            try (ProtocolClient replay = d.connect()) {
                replay.sendFrame(Wire.TYPE_HELLO, recorded);
                ProtocolClient.Reply r = replay.readReply();
                assertEquals(Wire.HELLO_REFUSED, r.status());
                assertEquals("bad token", r.message());
            }
        }
    }

    /** This host's first non-loopback IPv4 address, or null. */
    private static java.net.InetAddress lanAddress() throws Exception {
        for (java.net.NetworkInterface n : java.util.Collections.list(java.net.NetworkInterface.getNetworkInterfaces())) {
            if (!n.isUp() || n.isLoopback()) continue;
            for (java.net.InetAddress a : java.util.Collections.list(n.getInetAddresses())) {
                if (a instanceof java.net.Inet4Address) return a;
            }
        }
        return null;
    }

    @Test
    void guessingTokensFromOneAddressIsLockedOut() throws Exception {
        java.net.InetAddress lan = lanAddress();
        org.junit.jupiter.api.Assumptions.assumeTrue(lan != null, "no non-loopback address here (loopback is not throttled)");
        try (DaemonHarness d = new DaemonHarness(state, fixtures.workerLibDir(), TestInventory.none(), Map.of(
                "tenant.alice.token_sha256", Authenticator.hashToken(TOKEN_A),
                "control.auth_failures_per_minute", "5"), "0.0.0.0")) {
            for (int i = 0; i < 5; i++) {
                try (ProtocolClient c = d.connectTo(lan)) {
                    assertEquals("bad token", hello(d, c, "guess-" + i, 1).message());
                }
            }
            // the sixth try is not even checked, and the right token does not help either for a minute
            try (ProtocolClient c = d.connectTo(lan)) {
                ProtocolClient.Reply r = hello(d, c, TOKEN_A, 1);
                assertEquals(Wire.HELLO_REFUSED, r.status());
                assertTrue(r.message().startsWith("too many failed authentications from " + lan.getHostAddress()
                        + "; try again in"), r.message());
            }
            // loopback is the appliance's own: not throttled (a lockout there would lock out every co-located tenant)
            for (int i = 0; i < 7; i++) {
                try (ProtocolClient c = d.connect()) {
                    assertEquals("bad token", hello(d, c, "guess-" + i, 1).message());
                }
            }
            try (ProtocolClient c = d.connect()) {
                ProtocolClient.Reply r = hello(d, c, TOKEN_A, 1);
                assertEquals(Wire.HELLO_READY, r.status(), r.message());
            }
        }
    }

    @Test
    void theThrottleCountsIpv6PerSlash64AndNeverDropsALockout() throws Exception {
        io.vmcuda.appliance.auth.AuthThrottle t = new io.vmcuda.appliance.auth.AuthThrottle(2);
        java.net.InetAddress a1 = java.net.InetAddress.getByName("2001:db8:0:1::1");
        java.net.InetAddress a2 = java.net.InetAddress.getByName("2001:db8:0:1::ffff");
        java.net.InetAddress other = java.net.InetAddress.getByName("2001:db8:0:2::1");
        t.failed(a1, 0);
        t.failed(a2, 1);
        assertTrue(t.lockedSeconds(a1, 2) > 0 && t.lockedSeconds(a2, 2) > 0, "one /64, one source");
        assertEquals(0, t.lockedSeconds(other, 2));
        assertEquals(0, t.lockedSeconds(a1, 61_000_000_000L), "a minute later");
        java.net.InetAddress v4 = java.net.InetAddress.getByName("192.0.2.7");
        t.failed(v4, 0);
        t.failed(v4, 0);
        assertTrue(t.lockedSeconds(v4, 1) > 0);
        assertEquals(0, t.lockedSeconds(java.net.InetAddress.getByName("192.0.2.8"), 1));
        java.net.InetAddress lo = java.net.InetAddress.getByName("127.0.0.1");
        t.failed(lo, 0);
        t.failed(lo, 0);
        t.failed(lo, 0);
        assertEquals(0, t.lockedSeconds(lo, 1), "loopback is not throttled");
    }

    /**
     * A peer that opens connection after connection past the cap (from many addresses, as the review's flood did) is
     * refused each time and counted each time, but the log keeps only the first refusals of the minute, not one line
     * per connection: the flood must not fill the appliance's disk with its log.
     */
    @Test
    void refusedConnectionsAreCountedEachButLoggedAFewTimes() throws Exception {
        java.util.List<String> warnings = new java.util.ArrayList<>();
        java.util.logging.Logger controlLog = java.util.logging.Logger.getLogger(
                io.vmcuda.appliance.control.ControlServer.class.getPackageName() + ".ControlHandler");
        java.util.logging.Handler capture = new java.util.logging.Handler() {
            @Override
            public void publish(java.util.logging.LogRecord r) {
                if (r.getMessage().contains("await their handshake")) {
                    synchronized (warnings) {
                        warnings.add(r.getMessage());
                    }
                }
            }

            @Override
            public void flush() {}

            @Override
            public void close() {}
        };
        controlLog.addHandler(capture);
        int refused = 40;
        try (DaemonHarness d = new DaemonHarness(state, fixtures.workerLibDir(), TestInventory.none(), Map.of(
                "tenant.alice.token_sha256", Authenticator.hashToken(TOKEN_A),
                "control.max_handshakes_per_source", "1"));
             ProtocolClient idle = d.connect()) {
            assertTrue(idle.challenge != null);
            for (int i = 0; i < refused; i++) {
                try (ProtocolClient over = d.connect()) {
                    assertEquals(7, over.readError().code(), "connection " + i + " is refused");
                }
            }
            assertTrue(d.body("/metrics").contains("vmcuda_handshakes_refused_total " + refused + ".0"), "every one counted");
        } finally {
            controlLog.removeHandler(capture);
        }
        synchronized (warnings) {
            assertEquals(LogLimiter.LINES_PER_WINDOW, warnings.size(), warnings.toString());
            assertTrue(warnings.get(0).contains("too many connections from 127.0.0.1 await their handshake (1, "
                    + "control.max_handshakes_per_source)"), "the first refusal is in the log: " + warnings.get(0));
        }
    }

    /** Idle connections that never send HELLO: past the per-source cap they are closed at once. */
    @Test
    void aFloodOfIdleConnectionsIsCappedPerSource() throws Exception {
        try (DaemonHarness d = new DaemonHarness(state, fixtures.workerLibDir(), TestInventory.none(), Map.of(
                "tenant.alice.token_sha256", Authenticator.hashToken(TOKEN_A),
                "control.max_handshakes_per_source", "8"))) {
            java.util.List<ProtocolClient> idle = new java.util.ArrayList<>();
            try {
                for (int i = 0; i < 8; i++) {
                    idle.add(d.connect());
                    assertTrue(idle.get(i).challenge != null, "connection " + i + " is admitted");
                }
                try (ProtocolClient ninth = d.connect()) {
                    assertEquals(null, ninth.challenge);
                    ProtocolClient.ErrorFrame e = ninth.readError();
                    assertEquals(7, e.code());
                    assertTrue(e.message().contains("control.max_handshakes_per_source"), e.message());
                }
                // a client from another address is served meanwhile
                try (ProtocolClient other = d.connectFrom("127.0.0.2")) {
                    other.sendNewHello(binary, "other", TOKEN_A, 1);
                    assertEquals(Wire.HELLO_SEND_BINARY, other.readReply().status());
                }
                assertTrue(d.body("/metrics").contains("vmcuda_handshakes_refused_total 1"));
            } finally {
                for (ProtocolClient c : idle) c.close();
            }
            // once they are gone, this address is served again
            DaemonHarness.await(() -> {
                try (ProtocolClient c = d.connect()) {
                    return c.challenge != null;
                }
            });
        }
    }
}
