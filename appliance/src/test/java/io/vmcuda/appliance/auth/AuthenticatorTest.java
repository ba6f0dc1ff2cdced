package io.vmcuda.appliance.auth;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.nio.charset.StandardCharsets;
import java.util.HexFormat;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Tenants replaced by a reload: new sessions need the new token; running sessions' JOINs keep working. */
class AuthenticatorTest {
    private static Tenant tenant(String name, String token) {
        return new Tenant(name, HexFormat.of().parseHex(Authenticator.hashToken(token)), 0, 0, 0);
    }

    private static byte[] proof(String token, byte[] challenge, byte[] signed) {
        return Authenticator.proof(HexFormat.of().parseHex(Authenticator.hashToken(token)), challenge, signed);
    }

    @Test
    void aRotatedTokenStillJoinsButOpensNothingNew() {
        byte[] challenge = "c".repeat(32).getBytes(StandardCharsets.US_ASCII);
        byte[] hello = "hello".getBytes(StandardCharsets.US_ASCII);
        Authenticator auth = new Authenticator(List.of(tenant("a", "old-token-of-a"), tenant("b", "token-of-b")));
        auth.replace(List.of(tenant("a", "new-token-of-a"), tenant("b", "token-of-b")));
        assertNull(auth.authenticate(challenge, hello, proof("old-token-of-a", challenge, hello)), "no new session");
        assertEquals("a", auth.authenticateJoin(challenge, hello, proof("old-token-of-a", challenge, hello)).name());
        assertEquals("a", auth.authenticate(challenge, hello, proof("new-token-of-a", challenge, hello)).name());
        assertEquals("b", auth.authenticate(challenge, hello, proof("token-of-b", challenge, hello)).name());
        assertNull(auth.authenticateJoin(challenge, hello, proof("never-a-token", challenge, hello)));
        // removing every tenant (open mode) or adding the first needs a restart
        assertThrows(IllegalArgumentException.class, () -> auth.replace(List.of()));
        assertThrows(IllegalArgumentException.class, () -> new Authenticator(List.of()).replace(List.of(tenant("c", "t"))));
    }
}
