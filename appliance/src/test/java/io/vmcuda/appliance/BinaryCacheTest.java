package io.vmcuda.appliance;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.vmcuda.protocol.Wire;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HexFormat;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** A binary the appliance has rewritten once is never asked for again, also after a daemon restart. */
@Timeout(120)
class BinaryCacheTest {
    @TempDir
    Path state;

    /** Runs one session: HELLO, upload when asked, READY, MANIFEST, hang up. Returns whether SEND_BINARY came. */
    private static boolean session(DaemonHarness d, byte[] binary) throws Exception {
        return sessionAs(d, binary, null);
    }

    @Test
    void secondHelloSkipsUploadAndSoDoesARestartedDaemon() throws Exception {
        NativeFixtures fx = NativeFixtures.get();
        byte[] binary = Files.readAllBytes(fx.fakeWorker);
        String sha = HexFormat.of().formatHex(ProtocolClient.sha256(binary));

        try (DaemonHarness d = new DaemonHarness(state, fx.workerLibDir(), TestInventory.none(), Map.of())) {
            assertTrue(session(d, binary), "first HELLO uploads");
            assertTrue(!session(d, binary), "second HELLO is a cache hit");
        }
        Path entry = state.resolve("cache").resolve(sha);
        assertTrue(Files.isRegularFile(entry.resolve("original")));
        assertTrue(Files.isExecutable(entry.resolve("rewritten")));
        assertTrue(Files.readString(entry.resolve("meta.properties")).contains("sha256=" + sha));

        try (DaemonHarness d = new DaemonHarness(state, fx.workerLibDir(), TestInventory.none(), Map.of())) {
            assertTrue(!session(d, binary), "a restarted daemon finds the entry on disk");
        }
        String records = Files.readString(state.resolve("sessions.jsonl"));
        assertEquals(3, records.lines().count());
        assertEquals(2, records.lines().filter(l -> l.contains("\"cache_hit\":true")).count(), records);
    }

    /** Like {@link #session} as the tenant of {@code token} (null: no token, an open appliance). */
    private static boolean sessionAs(DaemonHarness d, byte[] binary, String token) throws Exception {
        boolean asked = false;
        try (ProtocolClient c = d.connect()) {
            if (token == null) c.sendNewHello(binary, "cached-app");
            else c.sendNewHello(binary, "tenant-app", token, 1);
            ProtocolClient.Reply r = c.readReply();
            if (r.status() == Wire.HELLO_SEND_BINARY) {
                asked = true;
                c.upload(binary, 1000);
                r = c.readReply();
            }
            assertEquals(Wire.HELLO_READY, r.status(), r.message());
            assertEquals(Wire.TYPE_MANIFEST, c.readFrame().type());
        }
        d.awaitBody("/metrics", m -> m.contains("vmcuda_sessions_active 0.0\n"));
        return asked;
    }

    @Test
    void aCachedBinaryServesOnlyTheTenantsThatUploadedIt() throws Exception {
        NativeFixtures fx = NativeFixtures.get();
        byte[] binary = Files.readAllBytes(fx.fakeWorker);
        String sha = HexFormat.of().formatHex(ProtocolClient.sha256(binary));
        Map<String, String> tenants = Map.of(
                "tenant.alice.token_sha256", io.vmcuda.appliance.auth.Authenticator.hashToken("alice-token-0123456789"),
                "tenant.bob.token_sha256", io.vmcuda.appliance.auth.Authenticator.hashToken("bob-token-0123456789"),
                "tenant.carol.token_sha256", io.vmcuda.appliance.auth.Authenticator.hashToken("carol-token-0123456789"));
        try (DaemonHarness d = new DaemonHarness(state, fx.workerLibDir(), TestInventory.none(), tenants)) {
            assertTrue(sessionAs(d, binary, "alice-token-0123456789"), "alice uploads");
            assertTrue(!sessionAs(d, binary, "alice-token-0123456789"), "alice's second session is a hit");
            // bob names the same hash: he is asked for the bytes as for any unknown program (no oracle, and he
            // cannot start alice's program without having it), then owns the entry too
            assertTrue(sessionAs(d, binary, "bob-token-0123456789"), "bob must upload");
            assertTrue(!sessionAs(d, binary, "bob-token-0123456789"), "bob's second session is a hit");
        }
        assertEquals("alice\nbob\n", Files.readString(state.resolve("cache").resolve(sha).resolve("tenants")));

        // the operator marks it public: carol runs it without uploading
        Map<String, String> withPublic = new java.util.HashMap<>(tenants);
        withPublic.put("cache.public_sha256", sha.toUpperCase());
        try (DaemonHarness d = new DaemonHarness(state, fx.workerLibDir(), TestInventory.none(), withPublic)) {
            assertTrue(!sessionAs(d, binary, "carol-token-0123456789"), "a public binary is a hit for every tenant");
        }
    }

    @Test
    void leftoversOfAnInterruptedAdmissionAreRemovedAtStart() throws Exception {
        Path staging = state.resolve("cache").resolve(".tmp-abc-123");
        Files.createDirectories(staging);
        Files.writeString(staging.resolve("original"), "half");
        try (DaemonHarness d = new DaemonHarness(state, state, TestInventory.none(), Map.of())) {
            assertTrue(Files.notExists(staging));
        }
    }
}
