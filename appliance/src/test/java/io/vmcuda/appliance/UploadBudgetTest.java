package io.vmcuda.appliance;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.vmcuda.appliance.auth.Authenticator;
import io.vmcuda.protocol.Wire;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * What one tenant's uploads in progress may announce together (cache.tenant_upload_bytes): an attack opened hundreds
 * of uploads and trickled bytes into them until the state disk was full and the next tenant's program could not be
 * stored. Past its share a tenant's next upload is REFUSED with a message naming the setting, another tenant uploads
 * as before, and the share comes back when an upload ends.
 */
@Timeout(120)
class UploadBudgetTest {
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

    /** A NEW HELLO for the binary; the appliance's first answer. */
    private static ProtocolClient.Reply hello(ProtocolClient c, String token) throws Exception {
        c.sendNewHello(binary, "upload-app", token, 1);
        return c.readReply();
    }

    @Test
    void aTenantsUploadsInProgressAreBoundedAndOthersUploadAsBefore() throws Exception {
        long share = binary.length + binary.length / 2; // room for one upload of the binary, not two
        try (DaemonHarness d = new DaemonHarness(state, fixtures.workerLibDir(), TestInventory.gpus(2), Map.of(
                "tenant.alice.token_sha256", Authenticator.hashToken(TOKEN_A),
                "tenant.bob.token_sha256", Authenticator.hashToken(TOKEN_B),
                "cache.tenant_upload_bytes", Long.toString(share)))) {
            ProtocolClient stalled = d.connect();
            assertEquals(Wire.HELLO_SEND_BINARY, hello(stalled, TOKEN_A).status(), "alice's first upload may start");
            // it sends nothing: its announced bytes hold alice's share
            try (ProtocolClient second = d.connect()) {
                ProtocolClient.Reply r = hello(second, TOKEN_A);
                assertEquals(Wire.HELLO_REFUSED, r.status(), r.message());
                assertTrue(r.message().contains("tenant 'alice' has uploads of " + binary.length + " bytes in progress")
                        && r.message().contains("cache.tenant_upload_bytes"), r.message());
            }
            try (ProtocolClient b = d.connect()) {
                ProtocolClient.Reply r = hello(b, TOKEN_B);
                assertEquals(Wire.HELLO_SEND_BINARY, r.status(), "bob's uploads do not count against alice's: " + r.message());
                b.upload(binary, 65536);
                r = b.readReply();
                assertEquals(Wire.HELLO_READY, r.status(), r.message());
            }
            stalled.close(); // alice's upload ends unfinished: her share comes back
            DaemonHarness.await(() -> {
                try (ProtocolClient again = d.connect()) {
                    return hello(again, TOKEN_A).status() == Wire.HELLO_SEND_BINARY;
                }
            });
        }
    }
}
