package io.vmcuda.appliance.cache;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.List;
import java.util.Set;
import java.util.function.Function;
import java.util.logging.Logger;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * Keeps a cache directory of {@code <sha256>/} entries within a disk budget: the least recently used entries
 * go first (the binary cache, the module cache). An entry's size is what its files take; when it was last used
 * is its {@code used} file's modification time, which a hit sets.
 */
final class LruEntries {
    private static final Logger LOG = Logger.getLogger(LruEntries.class.getName());
    private static final Pattern SHA256_HEX = Pattern.compile("[0-9a-f]{64}");

    private final Path dir;
    private final String what;          // for the log: "binary cache", "module cache"
    private final Function<Path, Path> usedFile;

    /** @param usedFile the file of an entry whose modification time says when it was last used */
    LruEntries(Path dir, String what, Function<Path, Path> usedFile) {
        this.dir = dir;
        this.what = what;
        this.usedFile = usedFile;
    }

    record Entry(Path dir, long bytes, long used) {
        String sha256() {
            return dir.getFileName().toString();
        }
    }

    /** Every entry, least recently used first. */
    List<Entry> entries() throws IOException {
        try (Stream<Path> s = Files.list(dir)) {
            return s.filter(p -> SHA256_HEX.matcher(p.getFileName().toString()).matches()).map(this::entry)
                    .sorted(Comparator.comparingLong(Entry::used)).toList();
        }
    }

    private Entry entry(Path p) {
        long bytes = 0;
        try (Stream<Path> files = Files.list(p)) {
            for (Path f : files.toList()) bytes += Files.isRegularFile(f) ? Files.size(f) : 0;
        } catch (IOException e) {
            // gone meanwhile, or unreadable: counts as empty and oldest, so it goes first
        }
        long used;
        try {
            used = Files.getLastModifiedTime(usedFile.apply(p)).toMillis();
        } catch (IOException e) {
            used = 0;
        }
        return new Entry(p, bytes, used);
    }

    /**
     * Deletes the least recently used of {@code among} (entries() or a subset of it, oldest first) until what they
     * take is at most {@code budget} bytes; never one of {@code keep}. Caller serialises.
     */
    void evict(List<Entry> among, long budget, Set<String> keep, String why) {
        evict(total(among), among, budget, keep, why);
    }

    /**
     * Deletes the least recently used of {@code candidates} (oldest first) while {@code total}, what a larger set
     * of entries holding them takes, is past {@code budget}; never one of {@code keep}. Returns what is left of
     * {@code total}. Caller serialises.
     */
    long evict(long total, List<Entry> candidates, long budget, Set<String> keep, String why) {
        for (Entry e : candidates) {
            if (total <= budget) break;
            if (keep.contains(e.sha256())) continue;
            delete(e, why);
            total -= e.bytes();
        }
        return total;
    }

    void delete(Entry e, String why) {
        BinaryCache.deleteTree(e.dir());
        LOG.info(what + ": evicted " + e.sha256() + " (" + e.bytes() + " bytes, least recently used" + why + ")");
    }

    static long total(List<Entry> entries) {
        return entries.stream().mapToLong(Entry::bytes).sum();
    }
}
