package io.vmcuda.appliance.session;

import io.netty.channel.Channel;
import io.netty.channel.unix.UnixChannel;
import java.io.BufferedReader;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Collection;
import java.util.HashSet;
import java.util.Set;

/**
 * Linux's socket table: a socket's inode from /proc/self/fd, and the inodes of the TCP sockets some process
 * still holds from /proc/self/net/tcp and tcp6 (the daemon's network namespace, where the client connections
 * were accepted whatever namespace their worker runs in). A socket no process holds is not listed, or listed
 * with inode 0 while the kernel finishes its close.
 */
final class ProcSocketTable implements SocketTable {
    private static final Path FDS = Path.of("/proc/self/fd");
    private static final Path[] TABLES = {Path.of("/proc/self/net/tcp"), Path.of("/proc/self/net/tcp6")};
    /** The inode column of /proc/net/tcp{,6} (0-based, after sl, addresses, state, queues, timers, uid, timeout). */
    private static final int INODE_COLUMN = 9;

    @Override
    public long inodeOf(Channel ch) {
        if (!(ch instanceof UnixChannel u) || !u.fd().isOpen()) return -1;
        try {
            String link = Files.readSymbolicLink(FDS.resolve(Integer.toString(u.fd().intValue()))).toString();
            if (!link.startsWith("socket:[") || !link.endsWith("]")) return -1;
            return Long.parseLong(link, "socket:[".length(), link.length() - 1, 10);
        } catch (IOException | RuntimeException e) {
            return -1;
        }
    }

    /**
     * The table is read in pieces while connections come and go, and a socket that moves in the kernel's hash
     * chain between two pieces can be left out of one reading: so a socket counts as closed only when two
     * readings, one after the other, both miss it.
     */
    @Override
    public Set<Long> closed(Collection<Long> inodes) throws IOException {
        Set<Long> missing = new HashSet<>(inodes);
        missing.removeAll(listed(missing));
        if (!missing.isEmpty()) missing.removeAll(listed(missing));
        return missing;
    }

    /** Those of {@code wanted} the table lists with a holder. */
    private static Set<Long> listed(Set<Long> wanted) throws IOException {
        Set<Long> found = new HashSet<>();
        for (Path table : TABLES) {
            if (!Files.exists(table)) continue; // no IPv6 on this host
            try (BufferedReader r = Files.newBufferedReader(table, StandardCharsets.US_ASCII)) {
                r.readLine(); // the header
                for (String line; (line = r.readLine()) != null; ) {
                    long inode = column(line, INODE_COLUMN);
                    if (inode > 0 && wanted.contains(inode)) found.add(inode);
                }
            }
        }
        return found;
    }

    /** The n-th whitespace-separated field of {@code line} as a number, or -1. */
    static long column(String line, int n) {
        int i = 0, len = line.length();
        for (int field = 0; ; field++) {
            while (i < len && line.charAt(i) == ' ') i++;
            int start = i;
            while (i < len && line.charAt(i) != ' ') i++;
            if (start == i) return -1;
            if (field == n) {
                try {
                    return Long.parseLong(line, start, i, 10);
                } catch (NumberFormatException e) {
                    return -1;
                }
            }
        }
    }
}
