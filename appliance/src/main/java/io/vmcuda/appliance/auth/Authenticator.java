package io.vmcuda.appliance.auth;

import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.security.SecureRandom;
import java.util.HexFormat;
import java.util.List;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/**
 * Maps a HELLO to its tenant by challenge and response (PROTOCOL.md "Session setup"): the daemon sends
 * each connection a fresh 32-byte nonce; the client proves it holds a tenant's token with
 * HMAC-SHA256(key = SHA-256(token), nonce || HELLO without its proof). The token never crosses the
 * network, and a recorded HELLO is worthless on any other connection. The config holds the HMAC keys
 * ({@code tenant.NAME.token_sha256}); the proof is checked against every tenant's key in constant time, all
 * of them every time, so neither timing nor order reveals which tenant exists.
 * With no tenants configured every client is {@link Tenant#ANONYMOUS} (open mode: loopback, or --insecure).
 */
public final class Authenticator {
    private static final String HMAC = "HmacSHA256";

    private volatile List<Tenant> tenants;
    /**
     * Tenants a reload replaced or removed: their tokens still let the running sessions they started open more
     * connections (JOIN, which also needs the session's key), so that rotating a token does not break a running
     * program's next thread. At most {@link #MAX_RETIRED}, the oldest dropped first.
     */
    private volatile List<Tenant> retired = List.of();
    static final int MAX_RETIRED = 1024;

    public Authenticator(List<Tenant> tenants) {
        this.tenants = List.copyOf(tenants);
    }

    /**
     * A reloaded configuration's tenants, for the HELLOs from now on (sessions keep the tenant they started
     * with). Going from no tenants to some, or back, changes what the daemon may listen on: that needs a restart.
     */
    public void replace(List<Tenant> next) {
        if (next.isEmpty() != tenants.isEmpty()) {
            throw new IllegalArgumentException(next.isEmpty() ? "the reloaded configuration has no tenants left (open mode needs a restart)"
                    : "the reloaded configuration adds tenants to an open appliance (that needs a restart)");
        }
        List<Tenant> gone = new java.util.ArrayList<>(retired);
        for (Tenant t : tenants) {
            if (next.stream().noneMatch(n -> n.name().equals(t.name()) && MessageDigest.isEqual(n.tokenSha256(), t.tokenSha256()))) {
                gone.add(t);
            }
        }
        this.retired = List.copyOf(gone.subList(Math.max(0, gone.size() - MAX_RETIRED), gone.size()));
        this.tenants = List.copyOf(next);
    }

    /** True when tokens are checked (at least one tenant configured). */
    public boolean required() {
        return !tenants.isEmpty();
    }

    public List<Tenant> tenants() {
        return tenants;
    }

    /**
     * The tenant whose token made {@code proof} over {@code challenge || signed}, or null when none did
     * (a client without a token sends zeros, which match nobody).
     */
    public Tenant authenticate(byte[] challenge, byte[] signed, byte[] proof) {
        List<Tenant> all = tenants;
        if (all.isEmpty()) return Tenant.ANONYMOUS;
        return match(all, challenge, signed, proof);
    }

    /**
     * For a JOIN: as {@link #authenticate}, and else a tenant a reload retired (its running sessions go on; the
     * session's key, checked next, must match as well).
     */
    public Tenant authenticateJoin(byte[] challenge, byte[] signed, byte[] proof) {
        Tenant t = authenticate(challenge, signed, proof);
        return t != null ? t : match(retired, challenge, signed, proof);
    }

    private static Tenant match(List<Tenant> candidates, byte[] challenge, byte[] signed, byte[] proof) {
        Tenant match = null;
        for (Tenant t : candidates) {
            if (MessageDigest.isEqual(proof(t.tokenSha256(), challenge, signed), proof)) match = t;
        }
        return match;
    }

    /** HMAC-SHA256(key, challenge || signed): what a client holding the token whose SHA-256 is {@code key} sends. */
    public static byte[] proof(byte[] key, byte[] challenge, byte[] signed) {
        try {
            Mac mac = Mac.getInstance(HMAC);
            mac.init(new SecretKeySpec(key, HMAC));
            mac.update(challenge);
            return mac.doFinal(signed);
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("every Java runtime has HmacSHA256", e);
        }
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

    /**
     * Why a token is too weak to be one, or null. The estimate is length × log2(distinct characters), which
     * must reach 120 bits (a random 32-hex-digit token passes; what {@link #generateToken()} makes, 64 hex
     * digits, has about 250), with at least 20 characters. Checked where a token becomes its config line
     * ({@code vmcudad --hash-token}); the daemon itself never sees tokens.
     */
    public static String weakness(String token) {
        long distinct = token.chars().distinct().count();
        double bits = distinct < 2 ? 0 : token.length() * (Math.log(distinct) / Math.log(2));
        if (token.length() < 20 || bits < 120) {
            return String.format("about %.0f bits from %d characters; a token needs about 128", bits, token.length());
        }
        return null;
    }

    static byte[] sha256(byte[] data) {
        try {
            return MessageDigest.getInstance("SHA-256").digest(data);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("every Java runtime has SHA-256", e);
        }
    }
}
