package io.vmcuda.appliance.session;

import io.netty.channel.Channel;
import java.io.IOException;
import java.util.Collection;
import java.util.Set;

/**
 * Whether a client connection the daemon handed to a worker is still open somewhere: the daemon keeps no
 * descriptor of it (that would keep the connection alive after the worker closed it), so it asks the kernel,
 * by the socket's inode. {@link ProcSocketTable} is Linux's; tests use a fake.
 */
interface SocketTable {
    /** The inode of the connection's socket, or -1 when it cannot be known. Called while the channel is open. */
    long inodeOf(Channel ch);

    /** Those of {@code inodes} whose sockets no process holds any more. */
    Set<Long> closed(Collection<Long> inodes) throws IOException;
}
