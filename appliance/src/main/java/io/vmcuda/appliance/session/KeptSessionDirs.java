package io.vmcuda.appliance.session;

import io.vmcuda.appliance.cache.BinaryCache;
import java.io.IOException;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Supplier;
import java.util.logging.Logger;
import java.util.stream.Stream;

/**
 * What ended sessions leave in the state directory stays within {@code session.kept_bytes}: each session's
 * {@code sessions/<id>/} keeps the tail of its worker's log after its disk went (up to 16 MiB, SessionDisks), and on an
 * appliance without session disks whatever its worker wrote. Nothing removed them, so a tenant who started many short
 * sessions that wrote much filled the state disk that every tenant's uploads and the daemon's records need (an
 * attack measured 290 MB/s of growth, kept across daemon restarts). After each session's clean-up, and at the
 * daemon's start, the directories of ended sessions are removed oldest first until the rest fit. sessions.jsonl keeps
 * the records of sessions whose logs are gone (it rotates on its own, session.records_max_bytes).
 */
final class KeptSessionDirs {
    private static final Logger LOG = Logger.getLogger(KeptSessionDirs.class.getName());
    /** What a file or directory is charged at least, and in whole blocks: what it takes of the disk, not its length. */
    private static final long BLOCK = 4096;
    private final Path sessionsDir;
    private final long budgetBytes;
    /** Ended sessions' directories measured so far: an ended session's directory no longer changes. */
    private final Map<Path, Kept> known = new HashMap<>();
    private boolean started;

    KeptSessionDirs(Path sessionsDir, long budgetBytes) {
        this.sessionsDir = sessionsDir;
        this.budgetBytes = budgetBytes;
    }

    /** @param endedMillis when the daemon first saw it ended (what earlier runs left: its modification time) */
    private record Kept(Path dir, long bytes, long endedMillis) {}

    /**
     * Removes the oldest directories of ended sessions until the others fit the budget. {@code running} gives the ids
     * of sessions not ended yet, or still being cleaned up, whose directories are never touched. It is asked after
     * the directories are listed: a session is counted as running before its directory is made (SessionManager puts
     * it in its table first), so a directory listed belongs to a session in that answer or to one that has ended.
     * Oldest means first seen ended by this daemon, not the directory's time, which a tenant's code could set.
     */
    synchronized void trim(Supplier<Set<Long>> running) {
        List<Kept> kept = endedDirs(running);
        started = true;
        long total = kept.stream().mapToLong(Kept::bytes).sum();
        if (total <= budgetBytes) return;
        kept.sort(Comparator.comparingLong(Kept::endedMillis));
        int removed = 0;
        long freed = 0;
        for (Kept k : kept) {
            if (total - freed <= budgetBytes) break;
            BinaryCache.deleteTree(k.dir());
            known.remove(k.dir());
            freed += k.bytes();
            removed++;
        }
        LOG.info("removed the directories (logs) of the " + removed + " oldest ended session(s), " + freed
                + " bytes, to keep those of ended sessions within session.kept_bytes = " + budgetBytes);
    }

    /** Directories named by a session id (digits only), not symbolic links, of sessions not in {@code running}. */
    private List<Kept> endedDirs(Supplier<Set<Long>> running) {
        Map<Path, Kept> seen = new HashMap<>();
        try (Stream<Path> s = Files.list(sessionsDir)) {
            List<Path> listed = s.toList();
            Set<Long> notEnded = running.get(); // after the listing (see trim)
            long now = System.currentTimeMillis();
            for (Path dir : listed) {
                String name = dir.getFileName().toString();
                if (!name.matches("[0-9]{1,19}") || notEnded.contains(parseId(name))) continue;
                Kept k = known.get(dir);
                if (k == null) {
                    if (!Files.isDirectory(dir, LinkOption.NOFOLLOW_LINKS)) continue;
                    long ended = started ? now
                            : Math.min(now, Files.getLastModifiedTime(dir, LinkOption.NOFOLLOW_LINKS).toMillis());
                    k = new Kept(dir, bytesBelow(dir), ended);
                }
                seen.put(dir, k);
            }
        } catch (IOException e) {
            LOG.warning("cannot look at the ended sessions' directories in " + sessionsDir + ": " + e.getMessage());
        }
        known.keySet().retainAll(seen.keySet());
        known.putAll(seen);
        return new ArrayList<>(seen.values());
    }

    private static long parseId(String digits) {
        try {
            return Long.parseLong(digits);
        } catch (NumberFormatException e) {
            return -1; // no session has it
        }
    }

    /**
     * What the tree below {@code dir} takes of the disk: each file in whole blocks, at least one, and a block per
     * directory, links not followed (the tree may be a tenant's making). Counting lengths alone, millions of sessions
     * leaving a few hundred bytes each would fit the budget while taking many times it, and inodes.
     */
    private static long bytesBelow(Path dir) throws IOException {
        long[] sum = {0};
        Files.walkFileTree(dir, new SimpleFileVisitor<>() {
            @Override
            public FileVisitResult preVisitDirectory(Path d, BasicFileAttributes a) {
                sum[0] += BLOCK;
                return FileVisitResult.CONTINUE;
            }

            @Override
            public FileVisitResult visitFile(Path file, BasicFileAttributes a) {
                sum[0] += Math.max(BLOCK, (a.size() + BLOCK - 1) / BLOCK * BLOCK);
                return FileVisitResult.CONTINUE;
            }

            @Override
            public FileVisitResult visitFileFailed(Path file, IOException e) {
                return FileVisitResult.CONTINUE;
            }
        });
        return sum[0];
    }
}
