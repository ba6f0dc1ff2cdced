package io.vmcuda.appliance.worker;

import java.util.BitSet;

/**
 * The uids of sandboxed workers ({@code worker.uid_range}): each session's worker runs as a uid of its
 * own, so that the per-user process limit, file ownership and signals separate sessions from each other
 * (a fork bomb exhausts only its own session's RLIMIT_NPROC; one worker cannot enter another's session
 * directory or signal its processes). A uid is handed out again only after its session ended, and as
 * late as possible (round robin through the range).
 */
public final class UidPool {
    private final long first;
    private final int size;
    private final BitSet used;
    private int cursor;

    /** {@code first..last} inclusive; at most 2^24 uids. */
    public UidPool(long first, long last) {
        if (first < 1000 || last < first || last - first >= (1 << 24) || last > 4_294_967_294L) {
            throw new IllegalArgumentException("worker.uid_range " + first + "-" + last
                    + " must be FIRST-LAST with 1000 <= FIRST <= LAST < 4294967295 and at most 16777216 uids");
        }
        this.first = first;
        this.size = (int) (last - first + 1);
        this.used = new BitSet(size);
    }

    /** Parses {@code FIRST-LAST}; null for an empty value (per-session uids off). */
    public static UidPool parse(String range) {
        String r = range.strip();
        if (r.isEmpty()) return null;
        int dash = r.indexOf('-');
        try {
            if (dash <= 0) throw new NumberFormatException();
            return new UidPool(Long.parseLong(r.substring(0, dash).strip()), Long.parseLong(r.substring(dash + 1).strip()));
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("worker.uid_range '" + range + "' is not FIRST-LAST (e.g. 5000000-5099999)");
        }
    }

    /** A uid no running session has, or -1 when every uid of the range is in use. */
    public synchronized long allocate() {
        int i = used.nextClearBit(cursor);
        if (i >= size) i = used.nextClearBit(0);
        if (i >= size) return -1;
        used.set(i);
        cursor = i + 1 >= size ? 0 : i + 1;
        return first + i;
    }

    /** Gives a uid back once nothing of its session runs any more. */
    public synchronized void release(long uid) {
        if (contains(uid)) used.clear((int) (uid - first));
    }

    /** Whether {@code uid} lies in the range. */
    public boolean contains(long uid) {
        return uid >= first && uid < first + size;
    }

    /** Takes {@code uid} out of circulation (a process of it still runs, e.g. one an earlier daemon left). */
    public synchronized void reserve(long uid) {
        if (contains(uid)) used.set((int) (uid - first));
    }

    /** FIRST-LAST, as configured. */
    public String describe() {
        return first + "-" + (first + size - 1);
    }

    public synchronized int inUse() {
        return used.cardinality();
    }
}
