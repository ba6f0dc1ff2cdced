package io.vmcuda.appliance;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.vmcuda.appliance.cache.BinaryCache;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Set;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * One tenant's uploads cannot fill the state disk nor push other tenants' programs out: past its share
 * (cache.tenant_disk_bytes) its own least recently used entries go, past the cache's budget (cache.disk_bytes)
 * everybody's least recently used. (An attack helper filled 501 MB with five uploads of one tenant before.)
 */
class BinaryCacheBudgetTest {
    @TempDir
    Path tmp;

    /** A program the rewriter admits, made distinct by bytes after its end (a different SHA-256 each). */
    private static String upload(BinaryCache cache, String tenant, int variant) throws Exception {
        byte[] base = Files.readAllBytes(NativeFixtures.get().fakeWorker);
        byte[] bytes = java.util.Arrays.copyOf(base, base.length + 8);
        for (int i = 0; i < 4; i++) bytes[base.length + i] = (byte) (variant >> (8 * i));
        bytes[base.length + 4] = (byte) tenant.hashCode();
        Path uploaded = Files.createDirectories(cache.uploadDir()).resolve("u-" + tenant + "-" + variant);
        Files.write(uploaded, bytes);
        String sha = HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(bytes));
        cache.admit(sha, "app", uploaded, tenant);
        Thread.sleep(20); // distinct last-use times
        return sha;
    }

    private static long entryBytes(Path entry) throws Exception {
        try (Stream<Path> s = Files.list(entry)) {
            long n = 0;
            for (Path f : s.toList()) n += Files.size(f);
            return n;
        }
    }

    @Test
    void aTenantsUploadsStayWithinItsShareAndTheCacheWithinItsBudget() throws Exception {
        BinaryCache probe = new BinaryCache(tmp.resolve("probe"), 1 << 20);
        long entry = entryBytes(tmp.resolve("probe").resolve(upload(probe, "x", 0))); // one entry's size

        Path dir = tmp.resolve("cache");
        BinaryCache cache = new BinaryCache(dir, 1 << 20, Set.of(), 4 * entry + entry / 2, 2 * entry + entry / 2);
        String alice = upload(cache, "alice", 1);
        List<String> mallory = new ArrayList<>();
        for (int i = 0; i < 5; i++) mallory.add(upload(cache, "mallory", 10 + i));
        // mallory keeps its two most recent programs; alice's is untouched
        assertTrue(cache.lookup(alice, "alice").isPresent(), "another tenant's program was pushed out");
        for (int i = 0; i < 3; i++) assertFalse(Files.exists(dir.resolve(mallory.get(i))), "mallory's old entry " + i + " stayed");
        for (int i = 3; i < 5; i++) assertTrue(cache.lookup(mallory.get(i), "mallory").isPresent(), "mallory's entry " + i);

        // alice's lookup made hers recently used; mallory's entry 4 too; bob's second upload passes the cache's
        // budget: the least recently used entry (mallory's 3) goes, whoever uploaded it
        cache.lookup(alice, "alice");
        cache.lookup(mallory.get(4), "mallory");
        String bob1 = upload(cache, "bob", 20);
        String bob2 = upload(cache, "bob", 21);
        assertFalse(Files.exists(dir.resolve(mallory.get(3))), "the least recently used entry stayed");
        for (String[] kept : new String[][] {{alice, "alice"}, {mallory.get(4), "mallory"}, {bob1, "bob"}, {bob2, "bob"}})
            assertTrue(cache.lookup(kept[0], kept[1]).isPresent(), kept[1] + "'s " + kept[0] + " went");
        long total = 0;
        try (Stream<Path> s = Files.list(dir)) {
            for (Path p : s.filter(p -> p.getFileName().toString().matches("[0-9a-f]{64}")).toList()) total += entryBytes(p);
        }
        assertTrue(total <= 4 * entry + entry / 2, "the cache holds " + total + " bytes, past its budget");
    }
}
