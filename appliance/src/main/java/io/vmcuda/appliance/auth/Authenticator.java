package io.vmcuda.appliance.auth;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.security.SecureRandom;
import java.util.HexFormat;
import java.util.List;

/**
 * Maps the token of a HELLO to its tenant. Tokens are stored as SHA-256 digests (tokens are 256-bit
 * random strings, so a plain digest suffices; see {@link #generateToken()}); the client's token is hashed
 * and compared with every tenant's digest in constant time, all of them every time, so neither timing nor
 * order reveals how much of a token matched or which tenant exists.
 * With no tenants configured every client is {@link Tenant#ANONYMOUS} (open mode: loopback, or --insecure).
 */
public final class Authenticator {
    private final List<Tenant> tenants;

    public Authenticator(List<Tenant> tenants) {
        this.tenants = List.copyOf(tenants);
    }

    /** True when tokens are checked (at least one tenant configured). */
    public boolean required() {
        return !tenants.isEmpty();
    }

    public List<Tenant> tenants() {
        return tenants;
    }

    /** The token's tenant, or null when the token is missing or matches none. */
    public Tenant authenticate(byte[] token) {
        if (!required()) return Tenant.ANONYMOUS;
        byte[] digest = sha256(token == null ? new byte[0] : token);
        Tenant match = null;
        for (Tenant t : tenants) {
            if (MessageDigest.isEqual(digest, t.tokenSha256()) & token != null && token.length > 0) match = t;
        }
        return match;
    }

    /** The value of {@code tenant.NAME.token_sha256} for a token: lower-case hex SHA-256 of its UTF-8 bytes. */
    public static String hashToken(String token) {
        return HexFormat.of().formatHex(sha256(token.getBytes(StandardCharsets.UTF_8)));
    }

    /** A new token: 32 random bytes as 64 hex digits. */
    public static String generateToken() {
        byte[] b = new byte[32];
        new SecureRandom().nextBytes(b);
        return HexFormat.of().formatHex(b);
    }

    static byte[] sha256(byte[] data) {
        try {
            return MessageDigest.getInstance("SHA-256").digest(data);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("every Java runtime has SHA-256", e);
        }
    }
}
