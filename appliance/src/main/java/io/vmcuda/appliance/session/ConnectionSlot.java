package io.vmcuda.appliance.session;

import io.netty.channel.Channel;
import io.netty.util.AttributeKey;

/**
 * One admitted client connection's place in its tenant's count of open connections ({@link TenantConnections}).
 * The daemon sees a connection close only while it holds it: at the hand-off its own copy closes at once and
 * the connection lives on in the worker. So the place is given back by whichever comes first of
 * <ul>
 * <li>the daemon's copy closing before any hand-off (refused, client gone while queued): Netty's closeFuture,
 *     so an abrupt disconnect leaks nothing;</li>
 * <li>a failed hand-off (the worker never got the descriptor);</li>
 * <li>the session's end (its worker has exited, and every descriptor it held with it);</li>
 * <li>a scan of the kernel's socket table that finds no process holding the socket any more (a client
 *     thread ended and closed its JOIN connection, and the worker closed its copy).</li>
 * </ul>
 * The others then find the place given back already. State changes hold the tenant count's monitor.
 */
public final class ConnectionSlot {
    enum State { DAEMON, HANDING_OVER, IN_WORKER, RELEASED }

    private static final AttributeKey<ConnectionSlot> KEY = AttributeKey.valueOf(ConnectionSlot.class, "slot");

    private final TenantCount owner;
    /** The socket's inode (what /proc/net/tcp lists), or -1 when unknown: then only the session's end frees it. */
    final long inode;
    State state = State.DAEMON; // guarded by owner

    ConnectionSlot(TenantCount owner, long inode) {
        this.owner = owner;
        this.inode = inode;
    }

    /** Ties the slot to {@code ch}: given back when the daemon's copy closes unless a hand-off is under way. */
    void attach(Channel ch) {
        ch.attr(KEY).set(this);
        ch.closeFuture().addListener(f -> owner.daemonCopyClosed(this));
    }

    /** The slot of a connection, or null (no cap, or admitted before counting began). */
    static ConnectionSlot of(Channel ch) {
        return ch.attr(KEY).get();
    }

    /** The connection is about to go to a worker: its daemon copy closing then does not end it. */
    void handingOver() {
        owner.handingOver(this);
    }

    /** The connection is gone (or never reached the worker): its place is free. Idempotent. */
    void release() {
        owner.release(this);
    }

    boolean released() {
        return owner.isReleased(this);
    }
}
