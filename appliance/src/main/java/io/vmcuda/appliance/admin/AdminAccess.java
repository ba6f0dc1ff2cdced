package io.vmcuda.appliance.admin;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;

/**
 * Who may read the admin port (CONFIG.md "Admin port"). The pages name every tenant's sessions and
 * programs, so when tenants are configured they are for the operator only: each request must carry
 * {@code Authorization: Bearer TOKEN} whose SHA-256 is {@code admin.token_sha256} (a read-only operator
 * role; it grants nothing on the control port). Without tenants (the open loopback appliance of the demo)
 * the port stays open. {@code /health} and {@code /healthz} ("ok") and {@code /readyz} (ready, or what keeps the
 * appliance from taking sessions: no GPU, an unwritable state directory) are always open: no tenant data.
 */
public final class AdminAccess {
    /** Outcome of a request's check; {@code reason} is what the 401/403 answer says. */
    public record Decision(boolean allowed, int status, String reason) {
        static final Decision OK = new Decision(true, 200, "");
    }

    private final boolean locked;
    private final byte[] tokenSha256; // null: no operator token configured

    /**
     * @param tenantsConfigured whether the control port checks tokens (then so does this port)
     * @param tokenSha256       admin.token_sha256, or null when not set
     */
    public AdminAccess(boolean tenantsConfigured, byte[] tokenSha256) {
        this.locked = tenantsConfigured;
        this.tokenSha256 = tokenSha256 == null ? null : tokenSha256.clone();
    }

    public static AdminAccess open() {
        return new AdminAccess(false, null);
    }

    public boolean locked() {
        return locked;
    }

    /** @param authorization the request's Authorization header, or null */
    public Decision check(String path, String authorization) {
        if (!locked || path.equals("/health") || path.equals("/healthz") || path.equals("/readyz")) return Decision.OK;
        if (tokenSha256 == null) {
            return new Decision(false, 403, "the admin port is closed: tenants are configured and admin.token_sha256 is "
                    + "not set (vmcudad --new-token makes one; see CONFIG.md \"Admin port\")\n");
        }
        String prefix = "Bearer ";
        if (authorization == null || !authorization.regionMatches(true, 0, prefix, 0, prefix.length())) {
            return new Decision(false, 401, "this admin port needs 'Authorization: Bearer TOKEN' (the operator token; "
                    + "vmcuda status reads it from VMCUDA_ADMIN_TOKEN or --token-file)\n");
        }
        byte[] given = sha256(authorization.substring(prefix.length()).strip().getBytes(StandardCharsets.UTF_8));
        if (!MessageDigest.isEqual(given, tokenSha256)) return new Decision(false, 403, "wrong admin token\n");
        return Decision.OK;
    }

    private static byte[] sha256(byte[] b) {
        try {
            return MessageDigest.getInstance("SHA-256").digest(b);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("every Java runtime has SHA-256", e);
        }
    }
}
