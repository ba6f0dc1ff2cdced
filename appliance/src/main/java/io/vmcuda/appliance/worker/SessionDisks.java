package io.vmcuda.appliance.worker;

import io.vmcuda.appliance.ApplianceConfig;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.logging.Logger;

/**
 * Each session's directory as a tmpfs of its own, {@code worker.disk_max} large (appliance/CONFIG.md "Session
 * disk"). It is the only place a sandboxed worker can write besides its bounded /tmp, so what a tenant's code
 * writes (files in its working directory, module offers, its log) is bounded per session instead of filling the
 * state disk the other tenants' uploads and the daemon's records need; the pages are charged to the session's
 * memory cgroup, and go when the session ends. The worker's log is kept: copied out and put back on the disk
 * where it was. Mounted with mount(8) by the daemon, which is root wherever the sandbox is used.
 */
public final class SessionDisks {
    private static final Logger LOG = Logger.getLogger(SessionDisks.class.getName());
    private static final String SOURCE = "vmcuda-session";
    /** How much of a session's log is kept when its directory goes (its end: the reason it stopped). */
    static final long LOG_KEPT_BYTES = 16L << 20;
    private final String size;
    private final java.util.Set<Path> mounted = java.util.concurrent.ConcurrentHashMap.newKeySet();

    private SessionDisks(String size) {
        this.size = size;
    }

    /**
     * The session disks configured, or null: {@code worker.disk_max = 0}, or a daemon that cannot mount (not root),
     * which with tenants kept apart ({@code required}) refuses to start instead. Unmounts what a daemon that died left
     * below {@code sessionsDir}.
     */
    public static SessionDisks resolve(ApplianceConfig config, boolean required, Path sessionsDir) {
        String size = config.workerDiskMax();
        if (size.matches("0+[kmgKMG]?")) {
            if (required) LOG.warning("worker.disk_max = 0: a session's files go to the state disk, unbounded in number");
            return null;
        }
        if (!"root".equals(System.getProperty("user.name"))) {
            String why = "session directories cannot be tmpfs mounts of their own (worker.disk_max): the daemon is not root";
            if (required) throw new IllegalStateException(why + "; with tenants run it as root or set worker.disk_max = 0");
            LOG.info(why + "; they lie on the state disk");
            return null;
        }
        SessionDisks d = new SessionDisks(size);
        d.sweep(sessionsDir);
        String unusable = d.probe(sessionsDir.resolve(".disk-probe"));
        if (unusable != null) {
            String why = "session directories cannot be tmpfs mounts of their own (worker.disk_max): " + unusable;
            if (required) throw new IllegalStateException(why + "; with tenants that must work, or set worker.disk_max = 0");
            LOG.warning(why + "; they lie on the state disk");
            return null;
        }
        LOG.info("session directories: a tmpfs of " + size + " each (worker.disk_max)");
        return d;
    }

    /** Makes {@code dir} (a new session's directory) a tmpfs of worker.disk_max. */
    public void mount(Path dir) throws IOException {
        mountTmpfs(dir);
        mounted.add(dir);
    }

    private void mountTmpfs(Path dir) throws IOException {
        Files.createDirectories(dir);
        run("mount", "-t", "tmpfs", "-o", "size=" + size + ",mode=0755,nosuid,nodev", SOURCE, dir.toString());
    }

    /**
     * At the session's end, with nothing of it running: unmounts {@code dir}, keeping the last {@link #LOG_KEPT_BYTES}
     * of {@code log} (a file in it) on the disk below, where it was. The session's uid owned the directory: the log is
     * read only if it still is a regular file (never through a link it may have put there), and the unmount happens
     * whatever the copy met.
     */
    public void release(Path dir, Path log) {
        if (!mounted.remove(dir)) return;
        Path kept = dir.resolveSibling(dir.getFileName() + ".log.tmp");
        try {
            keepTail(log, kept);
        } catch (IOException e) {
            LOG.warning("session directory " + dir + ": its log is not kept: " + e.getMessage());
        } finally {
            try {
                run("umount", "-l", dir.toString());
                if (Files.exists(kept, LinkOption.NOFOLLOW_LINKS)) Files.move(kept, log, StandardCopyOption.REPLACE_EXISTING);
            } catch (IOException e) {
                LOG.warning("session directory " + dir + ": " + e.getMessage());
            }
        }
    }

    /** At the daemon's stop: what sessions still hold (their end could not run) is released now. */
    public void releaseAll(java.util.function.Function<Path, Path> logOf) {
        for (Path dir : List.copyOf(mounted)) release(dir, logOf.apply(dir));
    }

    /** Nothing of the session runs any more: what it left at {@code log} cannot change between the check and the open. */
    private static void keepTail(Path log, Path kept) throws IOException {
        Files.deleteIfExists(kept);
        BasicFileAttributes a;
        try {
            a = Files.readAttributes(log, BasicFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
        } catch (java.nio.file.NoSuchFileException e) {
            return; // no log: nothing to keep
        }
        if (!a.isRegularFile()) throw new IOException(log + " is not a regular file any more (a link, a pipe...)");
        try (FileChannel in = FileChannel.open(log, StandardOpenOption.READ, LinkOption.NOFOLLOW_LINKS);
             FileChannel out = FileChannel.open(kept, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
            long size = in.size();
            for (long at = Math.max(0, size - LOG_KEPT_BYTES); at < size; ) {
                long n = in.transferTo(at, size - at, out);
                if (n <= 0) break;
                at += n;
            }
        }
    }

    /** Mounts and unmounts one, as every session will (a container may refuse mounts): null, or why not. */
    private String probe(Path dir) {
        try {
            mountTmpfs(dir);
            run("umount", dir.toString());
            Files.deleteIfExists(dir);
            return null;
        } catch (IOException e) {
            return e.getMessage();
        }
    }

    /** The tmpfs mounts of sessions below {@code sessionsDir} that a daemon which died left behind. */
    private void sweep(Path sessionsDir) {
        try {
            for (Path p : mountsBelow(Files.readString(Path.of("/proc/self/mountinfo")), sessionsDir.toRealPath())) {
                run("umount", "-l", p.toString());
                LOG.info("unmounted " + p + ", a session directory a previous daemon left");
            }
        } catch (IOException e) {
            LOG.warning("cannot sweep old session directories below " + sessionsDir + ": " + e.getMessage());
        }
    }

    /** Mount points of this daemon's session tmpfs below {@code dir} in /proc/self/mountinfo's text. */
    static List<Path> mountsBelow(String mountinfo, Path dir) {
        List<Path> out = new ArrayList<>();
        String prefix = dir + "/";
        for (String line : mountinfo.split("\n")) {
            String[] f = line.split(" ");
            int dash = java.util.Arrays.asList(f).indexOf("-");
            if (f.length < 5 || dash < 0 || dash + 2 >= f.length) continue;
            String point = MountInfo.unescape(f[4]);
            if (point.startsWith(prefix) && f[dash + 1].equals("tmpfs") && f[dash + 2].equals(SOURCE)) out.add(Path.of(point));
        }
        return out;
    }

    private static void run(String... cmd) throws IOException {
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        try {
            if (!p.waitFor(30, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                throw new IOException(String.join(" ", cmd) + " did not finish within 30 s");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted: " + String.join(" ", cmd));
        }
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
        if (p.exitValue() != 0) throw new IOException(String.join(" ", cmd) + " failed (" + p.exitValue() + "): " + out);
    }
}
