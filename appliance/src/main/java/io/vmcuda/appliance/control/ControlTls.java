package io.vmcuda.appliance.control;

import io.netty.channel.Channel;
import io.netty.handler.ssl.SslContext;
import io.netty.handler.ssl.SslContextBuilder;
import io.netty.handler.ssl.SslHandler;
import io.netty.handler.ssl.SslProvider;
import io.vmcuda.appliance.ApplianceConfig;
import io.vmcuda.protocol.Wire;
import java.io.IOException;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.HexFormat;
import javax.net.ssl.SSLException;

/**
 * TLS on the client port (PROTOCOL.md "Encryption"): the daemon's side of the first of a connection's two TLS
 * sessions. The daemon proves the appliance's certificate and runs the handshake of PROTOCOL.md "Session setup"
 * inside TLS; at the hand-off it ends its TLS without a word (no close_notify: the socket lives on) and gives the
 * client, inside READY, and the worker, beside the descriptor, a fresh key for the second session, which the two
 * open between themselves. The worker, running tenant code, never holds the appliance's private key, and the daemon
 * never relays a session's bytes. TLS 1.3 only, with the JDK's provider (no native library to ship).
 */
public final class ControlTls {
    private static final SecureRandom KEYS = new SecureRandom();
    private final SslContext context;
    private final Duration handshakeTimeout;

    private ControlTls(SslContext context, Duration handshakeTimeout) {
        this.context = context;
        this.handshakeTimeout = handshakeTimeout;
    }

    /** TLS from the configured files, or null when the configuration has none. */
    public static ControlTls of(ApplianceConfig.TlsFiles files, Duration handshakeTimeout) throws IOException {
        if (files == null) return null;
        try {
            SslContext ctx = SslContextBuilder.forServer(files.certificate().toFile(), files.key().toFile())
                    .sslProvider(SslProvider.JDK).protocols("TLSv1.3").build();
            return new ControlTls(ctx, handshakeTimeout);
        } catch (SSLException | IllegalArgumentException e) {
            throw new IOException("cannot use the TLS certificate " + files.certificate() + " with the key " + files.key()
                    + " (PEM, the key in PKCS#8): " + e.getMessage(), e);
        }
    }

    /** Puts TLS first in a new connection's pipeline; a client that does not finish it in time is closed. */
    void install(Channel ch) {
        SslHandler tls = context.newHandler(ch.alloc());
        tls.setHandshakeTimeoutMillis(handshakeTimeout.toMillis());
        ch.pipeline().addFirst(tls);
    }

    /** Whether the daemon speaks TLS on this connection. */
    public static boolean on(Channel ch) {
        return ch.pipeline().get(SslHandler.class) != null;
    }

    /** A fresh key for a connection's link to its worker. */
    public static byte[] newLinkKey() {
        byte[] key = new byte[Wire.LINK_KEY_BYTES];
        KEYS.nextBytes(key);
        return key;
    }

    /**
     * Ends the daemon's TLS on a connection whose last record (READY) is written: removing the handler sends
     * nothing, and a later close of the daemon's descriptor sends nothing either. Call on the channel's event loop.
     */
    public static void leave(Channel ch) {
        SslHandler tls = ch.pipeline().get(SslHandler.class);
        if (tls != null) ch.pipeline().remove(tls);
    }

    /** The line that gives a worker the key of the connection whose descriptor follows (PROTOCOL.md "Worker ↔ daemon"). */
    public static String linkLine(byte[] key) {
        return "LINK " + HexFormat.of().formatHex(key) + "\n";
    }
}
