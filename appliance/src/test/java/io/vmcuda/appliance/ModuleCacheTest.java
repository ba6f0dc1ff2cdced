package io.vmcuda.appliance;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.vmcuda.appliance.cache.ModuleCache;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HexFormat;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The persistent module cache on its own: what workers (tenant code) offer is admitted only as a regular
 * file whose bytes hash to its name; entries serve their owners (and public hashes) only; the least
 * recently used go first past the budget.
 */
class ModuleCacheTest {
    @TempDir
    Path dir;

    private Path offer(String name, byte[] bytes) throws Exception {
        Path f = dir.resolve("offers").resolve(name);
        Files.createDirectories(f.getParent());
        Files.write(f, bytes);
        return f;
    }

    private static String sha(byte[] b) throws Exception {
        return HexFormat.of().formatHex(java.security.MessageDigest.getInstance("SHA-256").digest(b));
    }

    @Test
    void admitsOnlyWhatHashesRightAndServesOnlyItsOwners() throws Exception {
        ModuleCache c = new ModuleCache(dir.resolve("modules"), 1 << 20, Set.of());
        byte[] image = "a fat binary".getBytes();
        String h = sha(image);
        assertTrue(c.lookup(h, image.length, "alice").isEmpty(), "nothing cached yet");
        assertNull(c.admit(h, image.length, "alice", offer(h, image)));
        assertEquals(image.length, Files.size(c.lookup(h, image.length, "alice").orElseThrow()));
        assertTrue(c.lookup(h, image.length + 1, "alice").isEmpty(), "another size is another image");
        assertTrue(c.lookup(h, image.length, "bob").isEmpty(), "bob never uploaded it");
        assertNull(c.admit(h, image.length, "bob", offer(h, image)), "bob uploads it once");
        assertTrue(c.lookup(h, image.length, "bob").isPresent());

        // a worker lying about the content, a link to somebody else's file, a directory
        byte[] other = "something else".getBytes();
        String lie = sha("claimed".getBytes());
        assertTrue(c.admit(lie, other.length, "alice", offer(lie, other)).contains("do not hash"));
        Path link = dir.resolve("offers").resolve("link");
        Files.createSymbolicLink(link, offer("target", image));
        assertTrue(c.admit(h, image.length, "carol", link).contains("not a regular file"));
        assertTrue(c.lookup(h, image.length, "carol").isEmpty());
        assertTrue(c.admit(h, image.length, "carol", dir.resolve("offers")).contains("not a regular file"));
    }

    @Test
    void publicHashesServeEveryTenant() throws Exception {
        byte[] image = "a library everyone loads".getBytes();
        String h = sha(image);
        ModuleCache c = new ModuleCache(dir.resolve("modules"), 1 << 20, Set.of(h));
        assertNull(c.admit(h, image.length, "operator", offer(h, image)));
        assertTrue(c.lookup(h, image.length, "anyone").isPresent());
    }

    @Test
    void theLeastRecentlyUsedGoPastTheBudget() throws Exception {
        ModuleCache c = new ModuleCache(dir.resolve("modules"), 100, Set.of());
        byte[] a = new byte[60], b = new byte[60];
        a[0] = 1;
        b[0] = 2;
        assertNull(c.admit(sha(a), 60, "t", offer(sha(a), a)));
        Thread.sleep(20); // distinct use times
        assertNull(c.admit(sha(b), 60, "t", offer(sha(b), b)));
        assertTrue(c.lookup(sha(a), 60, "t").isEmpty(), "the older entry made room");
        assertTrue(c.lookup(sha(b), 60, "t").isPresent());
        assertTrue(c.admit(sha(a), 101, "t", offer("x", new byte[101])).contains("outside"), "bigger than the budget");
    }
}
