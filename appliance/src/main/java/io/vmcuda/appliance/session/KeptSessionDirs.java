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
import java.util.List;
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
    private final Path sessionsDir;
    private final long budgetBytes;

    KeptSessionDirs(Path sessionsDir, long budgetBytes) {
        this.sessionsDir = sessionsDir;
        this.budgetBytes = budgetBytes;
    }

    private record Kept(Path dir, long bytes, long modifiedMillis) {}

    /**
     * Removes the oldest directories of ended sessions until the others fit the budget. {@code running} gives the ids
     * of sessions not ended yet, or still being cleaned up, whose directories are never touched. It is asked after
     * the directories are listed: a session is counted as running before its directory is made (SessionManager puts
     * it in its table first), so a directory listed belongs to a session in that answer or to one that has ended.
     */
    synchronized void trim(Supplier<Set<Long>> running) {
        List<Kept> kept = endedDirs(running);
        long total = kept.stream().mapToLong(Kept::bytes).sum();
        if (total <= budgetBytes) return;
        kept.sort(Comparator.comparingLong(Kept::modifiedMillis));
        int removed = 0;
        long freed = 0;
        for (Kept k : kept) {
            if (total - freed <= budgetBytes) break;
            BinaryCache.deleteTree(k.dir());
            freed += k.bytes();
            removed++;
        }
        LOG.info("removed the directories (logs) of the " + removed + " oldest ended session(s), " + freed
                + " bytes, to keep those of ended sessions within session.kept_bytes = " + budgetBytes);
    }

    /** Directories named by a session id (digits only), not symbolic links, of sessions not in {@code running}. */
    private List<Kept> endedDirs(Supplier<Set<Long>> running) {
        List<Kept> out = new ArrayList<>();
        try (Stream<Path> s = Files.list(sessionsDir)) {
            List<Path> listed = s.toList();
            Set<Long> notEnded = running.get(); // after the listing (see trim)
            for (Path dir : listed) {
                String name = dir.getFileName().toString();
                if (!name.matches("[0-9]{1,19}") || notEnded.contains(parseId(name))) continue;
                if (!Files.isDirectory(dir, LinkOption.NOFOLLOW_LINKS)) continue;
                out.add(new Kept(dir, bytesBelow(dir), Files.getLastModifiedTime(dir, LinkOption.NOFOLLOW_LINKS).toMillis()));
            }
        } catch (IOException e) {
            LOG.warning("cannot look at the ended sessions' directories in " + sessionsDir + ": " + e.getMessage());
        }
        return out;
    }

    private static long parseId(String digits) {
        try {
            return Long.parseLong(digits);
        } catch (NumberFormatException e) {
            return -1; // no session has it
        }
    }

    /** The bytes of the regular files below {@code dir}, links not followed (the tree may be a tenant's making). */
    private static long bytesBelow(Path dir) throws IOException {
        long[] sum = {0};
        Files.walkFileTree(dir, new SimpleFileVisitor<>() {
            @Override
            public FileVisitResult visitFile(Path file, BasicFileAttributes a) {
                if (a.isRegularFile()) sum[0] += a.size();
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
