package io.vmcuda.appliance.worker;

import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.FileSystems;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.SecureDirectoryStream;
import java.nio.file.attribute.GroupPrincipal;
import java.nio.file.attribute.PosixFileAttributeView;
import java.nio.file.attribute.PosixFileAttributes;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.UserPrincipal;
import java.util.EnumSet;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.LongPredicate;

/**
 * Takes back what a session's uid owned once its processes are gone, before the uid serves another session:
 * <ul>
 * <li>its session directory becomes root's: the top first (so no other uid can enter it by path), then every
 * entry, through directory descriptors and without following a link (a tree the tenant built may hold links
 * to anywhere), with group and other write and set-id bits removed; links, pipes and sockets are deleted;</li>
 * <li>whatever the uid left at the top of /dev/shm is deleted, so that the uid's next session finds nothing
 * of this one there; at the daemon's start, what every uid of the range left there (a daemon killed before it
 * could take it back) goes too.</li>
 * </ul>
 * Deeper than {@link #MAX_DEPTH} levels the walk stops: the session directory lies in the daemon's state,
 * which no worker can see, so what is left below stays out of every later session's reach.
 */
final class UidReclaim {
    static final int MAX_DEPTH = 64;
    private static final Path SHM = Path.of("/dev/shm");

    private final UserPrincipal root;
    private final GroupPrincipal rootGroup;

    UidReclaim() throws IOException {
        var lookup = FileSystems.getDefault().getUserPrincipalLookupService();
        this.root = lookup.lookupPrincipalByName("root");
        this.rootGroup = lookup.lookupPrincipalByGroupName("root");
    }

    /** The session directory back to root; a directory that was never made counts as done. */
    void reclaim(Path dir) throws IOException {
        if (!Files.exists(dir, LinkOption.NOFOLLOW_LINKS)) return;
        if (!Files.isDirectory(dir, LinkOption.NOFOLLOW_LINKS)) throw new IOException(dir + " is not a directory");
        PosixFileAttributeView top = Files.getFileAttributeView(dir, PosixFileAttributeView.class, LinkOption.NOFOLLOW_LINKS);
        top.setOwner(root);
        top.setGroup(rootGroup);
        top.setPermissions(EnumSet.of(PosixFilePermission.OWNER_READ, PosixFilePermission.OWNER_WRITE,
                PosixFilePermission.OWNER_EXECUTE));
        try (DirectoryStream<Path> ds = Files.newDirectoryStream(dir)) {
            if (!(ds instanceof SecureDirectoryStream<Path> sds)) throw new IOException("no secure directory streams here");
            walk(sds, 1);
        }
    }

    private void walk(SecureDirectoryStream<Path> dir, int depth) throws IOException {
        for (Path entry : dir) {
            Path name = entry.getFileName();
            PosixFileAttributeView v = dir.getFileAttributeView(name, PosixFileAttributeView.class, LinkOption.NOFOLLOW_LINKS);
            PosixFileAttributes a = v.readAttributes();
            if (a.isSymbolicLink() || a.isOther()) {
                // links, pipes and sockets the tenant made go: changing a link's owner is refused here, and taking a
                // pipe's mode opens it, which waits for a writer that never comes
                dir.deleteFile(name);
                continue;
            }
            if (a.isDirectory() && depth < MAX_DEPTH) {
                try (SecureDirectoryStream<Path> sub = dir.newDirectoryStream(name, LinkOption.NOFOLLOW_LINKS)) {
                    walk(sub, depth + 1);
                }
            }
            v.setOwner(root);
            v.setGroup(rootGroup);
            v.setPermissions(withoutSharing(a.permissions()));
        }
    }

    private static Set<PosixFilePermission> withoutSharing(Set<PosixFilePermission> p) {
        Set<PosixFilePermission> s = EnumSet.noneOf(PosixFilePermission.class);
        s.addAll(p);
        s.remove(PosixFilePermission.GROUP_WRITE);
        s.remove(PosixFilePermission.OTHERS_WRITE);
        return s; // set-uid/gid bits are not PosixFilePermissions: writing the mode clears them
    }

    /** Deletes what {@code uid} owns at the top of /dev/shm (files, links, and directory trees of any depth). */
    void sweepShm(long uid) throws IOException {
        sweepShm(owner -> owner == uid);
    }

    /** Deletes what the uids {@code owners} accepts own at the top of /dev/shm. */
    void sweepShm(LongPredicate owners) throws IOException {
        if (!Files.isDirectory(SHM)) return;
        try (DirectoryStream<Path> ds = Files.newDirectoryStream(SHM)) {
            if (!(ds instanceof SecureDirectoryStream<Path> sds)) throw new IOException("no secure directory streams here");
            for (Path entry : sds) {
                Path name = entry.getFileName();
                PosixFileAttributeView v = sds.getFileAttributeView(name, PosixFileAttributeView.class, LinkOption.NOFOLLOW_LINKS);
                long owner;
                try {
                    owner = ((Number) Files.getAttribute(entry, "unix:uid", LinkOption.NOFOLLOW_LINKS)).longValue();
                } catch (NoSuchFileException gone) {
                    continue;
                }
                if (!owners.test(owner)) continue;
                if (v.readAttributes().isDirectory()) {
                    try (SecureDirectoryStream<Path> sub = sds.newDirectoryStream(name, LinkOption.NOFOLLOW_LINKS)) {
                        empty(sub);
                    }
                    sds.deleteDirectory(name);
                } else {
                    sds.deleteFile(name);
                }
            }
        }
    }

    /**
     * Empties a directory tree of any depth with at most {@link #MAX_DEPTH} directories open at once: a directory
     * found that deep is moved up into {@code top} (a rename within the tree) and emptied on a later pass. A tenant
     * can nest directories far deeper than any recursion or descriptor limit (the walk that gave up at 64 levels
     * left 256 MiB of /dev/shm behind and the uid out of circulation for good).
     */
    static void empty(SecureDirectoryStream<Path> top) throws IOException {
        long[] hoisted = {0};
        boolean moved;
        do { // a stream lists once: each pass opens the directory again
            try (SecureDirectoryStream<Path> pass = top.newDirectoryStream(Path.of("."), LinkOption.NOFOLLOW_LINKS)) {
                moved = emptyBelow(top, pass, 1, hoisted);
            }
        } while (moved); // something moved up into top during the pass: go again until a pass finds nothing to move
    }

    /** One pass; true when it moved a directory up into {@code top} (which may then hold more to delete). */
    private static boolean emptyBelow(SecureDirectoryStream<Path> top, SecureDirectoryStream<Path> dir, int depth,
                                      long[] hoisted) throws IOException {
        boolean moved = false;
        for (Path entry : dir) {
            Path name = entry.getFileName();
            if (!dir.getFileAttributeView(name, PosixFileAttributeView.class, LinkOption.NOFOLLOW_LINKS).readAttributes()
                    .isDirectory()) {
                dir.deleteFile(name);
                continue;
            }
            if (depth >= MAX_DEPTH) {
                dir.move(name, top, freeName(top, hoisted));
                moved = true;
                continue;
            }
            try (SecureDirectoryStream<Path> sub = dir.newDirectoryStream(name, LinkOption.NOFOLLOW_LINKS)) {
                moved |= emptyBelow(top, sub, depth + 1, hoisted);
            }
            dir.deleteDirectory(name);
        }
        return moved;
    }

    /** A name {@code top} does not hold (the session's processes are gone: nothing else writes in the tree). */
    private static Path freeName(SecureDirectoryStream<Path> top, long[] counter) throws IOException {
        while (true) {
            Path name = Path.of(".vmcuda-deep-" + ++counter[0]);
            try {
                top.getFileAttributeView(name, PosixFileAttributeView.class, LinkOption.NOFOLLOW_LINKS).readAttributes();
            } catch (NoSuchFileException free) {
                return name;
            }
        }
    }

    /** The uids {@code which} accepts that own a process now (real or effective uid, from /proc). */
    static Set<Long> uidsWithProcesses(LongPredicate which) {
        Set<Long> found = new TreeSet<>();
        try (DirectoryStream<Path> procs = Files.newDirectoryStream(Path.of("/proc"), "[0-9]*")) {
            for (Path proc : procs) {
                try {
                    for (String line : Files.readAllLines(proc.resolve("status"))) {
                        if (!line.startsWith("Uid:")) continue;
                        String[] f = line.substring(4).trim().split("\\s+");
                        for (int i = 0; i < Math.min(2, f.length); i++) {
                            long uid = Long.parseLong(f[i]);
                            if (which.test(uid)) found.add(uid);
                        }
                        break;
                    }
                } catch (IOException | NumberFormatException gone) {
                    // the process ended while we looked
                }
            }
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
        return found;
    }
}
