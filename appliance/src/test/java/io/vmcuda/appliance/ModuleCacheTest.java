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
 * file whose bytes hash to its name and look like a module image; entries serve their owners (and public
 * hashes) only; the least recently used go first past the budget, and past its share a tenant's own.
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

    /** PTX text as nvcc writes it: a comment, then the directives. */
    private static byte[] ptx(String comment) {
        return ("//\n// " + comment + "\n//\n.version 8.0\n.target sm_90\n").getBytes();
    }

    private static String sha(byte[] b) throws Exception {
        return HexFormat.of().formatHex(java.security.MessageDigest.getInstance("SHA-256").digest(b));
    }

    @Test
    void admitsOnlyWhatHashesRightAndServesOnlyItsOwners() throws Exception {
        ModuleCache c = new ModuleCache(dir.resolve("modules"), 1 << 20, Set.of());
        byte[] image = ptx("a module");
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

    /** A fat binary as the CUDA toolchain lays one out: magic, version, header size, payload size, payload. */
    private static byte[] fatbin(int payload, int fill) {
        java.nio.ByteBuffer b = java.nio.ByteBuffer.allocate(16 + payload).order(java.nio.ByteOrder.LITTLE_ENDIAN);
        b.putInt(0xba55ed50).putShort((short) 1).putShort((short) 16).putLong(payload);
        while (b.hasRemaining()) b.put((byte) fill);
        return b.array();
    }

    /** A 64-bit ELF file whose only content is a .nv_fatbin section holding the given bytes. */
    private static byte[] elfWithFatbinSection(byte[] section) {
        byte[] names = "\0.shstrtab\0.nv_fatbin\0".getBytes(java.nio.charset.StandardCharsets.ISO_8859_1);
        int dataAt = 64, namesAt = dataAt + section.length, shAt = (namesAt + names.length + 7) & ~7;
        java.nio.ByteBuffer b = java.nio.ByteBuffer.allocate(shAt + 3 * 64).order(java.nio.ByteOrder.LITTLE_ENDIAN);
        b.put(new byte[] {0x7f, 'E', 'L', 'F', 2, 1, 1}).position(16);
        b.putShort((short) 3).putShort((short) 62).putInt(1).putLong(0).putLong(0).putLong(shAt).putInt(0)
         .putShort((short) 64).putShort((short) 0).putShort((short) 0).putShort((short) 64).putShort((short) 3)
         .putShort((short) 1);
        b.put(dataAt, section).put(namesAt, names);
        int[][] headers = {{0, 0, 0, 0}, {1, 3, namesAt, names.length}, {11, 1, dataAt, section.length}};
        for (int i = 0; i < 3; i++) {
            int at = shAt + 64 * i;
            b.putInt(at, headers[i][0]).putInt(at + 4, headers[i][1]).putLong(at + 0x18, headers[i][2])
             .putLong(at + 0x20, headers[i][3]);
        }
        return b.array();
    }

    /** vmcudad cache seed: the fat binaries of a CUDA library become entries every tenant may use. */
    @Test
    void seededLibraryImagesServeEveryTenant() throws Exception {
        byte[] first = fatbin(37, 1), second = fatbin(64, 2); // the first is padded to 8 bytes in the section
        byte[] section = new byte[56 + second.length];
        System.arraycopy(first, 0, section, 0, first.length);
        System.arraycopy(second, 0, section, 56, second.length);
        Path lib = dir.resolve("libfake.so");
        Files.write(lib, elfWithFatbinSection(section));
        assertEquals(java.util.List.of(new io.vmcuda.appliance.cache.ModuleImages.Image(64, 53),
                new io.vmcuda.appliance.cache.ModuleImages.Image(64 + 56, 80)), io.vmcuda.appliance.cache.ModuleImages.in(lib));

        VmcudadRun seeded = VmcudadRun.of("cache", "seed", "--state-dir", dir.toString(), lib.toString());
        assertEquals(0, seeded.status(), seeded.err());
        assertTrue(seeded.out().contains("2 module image(s), 133 bytes"), seeded.out());
        ModuleCache c = new ModuleCache(dir.resolve("modules"), 1 << 20, Set.of());
        assertTrue(c.lookup(sha(first), first.length, "dave").isPresent(), "seeded: any tenant, no upload");
        assertTrue(c.lookup(sha(second), second.length, "erin").isPresent());

        // a file with no CUDA images, a damaged section: said so, nothing stored, no exception
        Path text = dir.resolve("notes.txt");
        Files.writeString(text, "not a library");
        Path cut = dir.resolve("libcut.so");
        byte[] damaged = elfWithFatbinSection(section);
        java.nio.ByteBuffer.wrap(damaged).order(java.nio.ByteOrder.LITTLE_ENDIAN).putLong(64 + 8, 1L << 40);
        Files.write(cut, damaged);
        VmcudadRun refused = VmcudadRun.of("cache", "seed", "--state-dir", dir.toString(), text.toString(), cut.toString());
        assertEquals(1, refused.status());
        assertTrue(refused.err().contains("notes.txt: no module images"), refused.err());
        assertTrue(refused.err().contains("libcut.so: no module images"), refused.err());
        // a raw fat binary whose payload size overflows the arithmetic: nothing, no exception
        Path huge = dir.resolve("huge.fatbin");
        byte[] raw = fatbin(8, 3);
        java.nio.ByteBuffer.wrap(raw).order(java.nio.ByteOrder.LITTLE_ENDIAN).putLong(8, Long.MAX_VALUE - 4);
        Files.write(huge, raw);
        assertEquals(java.util.List.of(), io.vmcuda.appliance.cache.ModuleImages.in(huge));
    }

    @Test
    void publicHashesServeEveryTenant() throws Exception {
        byte[] image = ptx("a library everyone loads");
        String h = sha(image);
        ModuleCache c = new ModuleCache(dir.resolve("modules"), 1 << 20, Set.of(h));
        assertNull(c.admit(h, image.length, "operator", offer(h, image)));
        assertTrue(c.lookup(h, image.length, "anyone").isPresent());
    }

    @Test
    void theLeastRecentlyUsedGoPastTheBudget() throws Exception {
        ModuleCache c = new ModuleCache(dir.resolve("modules"), 100, Set.of());
        byte[] a = fatbin(44, 1), b = fatbin(44, 2); // 60 bytes each
        assertNull(c.admit(sha(a), 60, "t", offer(sha(a), a)));
        Thread.sleep(20); // distinct use times
        assertNull(c.admit(sha(b), 60, "t", offer(sha(b), b)));
        assertTrue(c.lookup(sha(a), 60, "t").isEmpty(), "the older entry made room");
        assertTrue(c.lookup(sha(b), 60, "t").isPresent());
        assertTrue(c.admit(sha(a), 101, "t", offer("x", new byte[101])).contains("outside"), "bigger than the budget");
    }

    /** Admits a distinct 900-byte fat binary as {@code tenant}'s; distinct last-use times. */
    private String admitImage(ModuleCache c, String tenant, int variant) throws Exception {
        byte[] image = fatbin(884, variant);
        java.nio.ByteBuffer.wrap(image).order(java.nio.ByteOrder.LITTLE_ENDIAN).putInt(16, variant); // payload differs
        String h = sha(image);
        assertNull(c.admit(h, image.length, tenant, offer(h + "-" + tenant, image)));
        Thread.sleep(15);
        return h;
    }

    private long cachedBytes() throws Exception {
        long total = 0;
        try (java.util.stream.Stream<Path> s = Files.walk(dir.resolve("modules"))) {
            for (Path f : s.filter(Files::isRegularFile).toList()) total += Files.size(f);
        }
        return total;
    }

    /**
     * The attack that found it: one tenant's session offers far more than the whole cache (its own code writes
     * the offers). Before, every other tenant's images went, least recently used first; now the flood pushes
     * out only the flooding tenant's own entries: another tenant's, one it shares with the flooder and the
     * operator's seeded one all stay, and so does the budget.
     */
    @Test
    void aTenantFloodingTheCacheEvictsOnlyItsOwnImages() throws Exception {
        ModuleCache c = new ModuleCache(dir.resolve("modules"), 8000, 4000, Set.of());
        Path lib = dir.resolve("seeded.fatbin");
        byte[] seededImage = fatbin(884, 99);
        Files.write(lib, seededImage);
        String seeded = c.seedPublic(lib, new io.vmcuda.appliance.cache.ModuleImages.Image(0, seededImage.length));
        Thread.sleep(15);
        java.util.List<String> alice = new java.util.ArrayList<>();
        for (int i = 0; i < 3; i++) alice.add(admitImage(c, "alice", i));
        String both = admitImage(c, "alice", 50);
        assertNull(c.admit(both, 900, "bob", offer(both + "-bob", Files.readAllBytes(dir.resolve("offers").resolve(both + "-alice")))));
        java.util.List<String> bob = new java.util.ArrayList<>();
        for (int i = 0; i < 30; i++) bob.add(admitImage(c, "bob", 100 + i)); // 27 KB offered into an 8 KB cache

        for (String h : alice) assertTrue(c.lookup(h, 900, "alice").isPresent(), "bob's flood evicted alice's " + h);
        assertTrue(c.lookup(both, 900, "alice").isPresent(), "bob's flood took the image alice shares with him");
        assertTrue(c.lookup(both, 900, "bob").isEmpty(), "past his share bob lets go of the shared image");
        assertTrue(c.lookup(seeded, seededImage.length, "carol").isPresent(), "bob's flood evicted the seeded image");
        for (int i = 27; i < 30; i++) assertTrue(c.lookup(bob.get(i), 900, "bob").isPresent(), "bob's recent image " + i);
        for (int i = 0; i < 27; i++) assertTrue(c.lookup(bob.get(i), 900, "bob").isEmpty(), "bob's old image " + i + " stayed");
        assertTrue(cachedBytes() <= 8000, "the cache holds " + cachedBytes() + " bytes, past its budget");
    }

    /** Shares that together exceed the cache (an operator's setting) still keep the cache within its budget. */
    @Test
    void sharesPastTheBudgetStillKeepTheBudget() throws Exception {
        ModuleCache c = new ModuleCache(dir.resolve("modules"), 4000, 4000, Set.of());
        for (int i = 0; i < 4; i++) admitImage(c, "alice", i);
        String last = admitImage(c, "bob", 10);
        assertTrue(c.lookup(last, 900, "bob").isPresent(), "the admitted image went at once");
        assertTrue(cachedBytes() <= 4000, "the cache holds " + cachedBytes() + " bytes, past its budget");
        byte[] big = fatbin(4084, 7);
        assertTrue(new ModuleCache(dir.resolve("small"), 1 << 20, 4000, Set.of())
                .admit(sha(big), big.length, "bob", offer(sha(big), big)).contains("share"), "bigger than a share");
    }

    /** Tenant code can write any file among its worker's offers: only what looks like a module image is kept. */
    @Test
    void onlyWhatLooksLikeAModuleImageIsAdmitted() throws Exception {
        ModuleCache c = new ModuleCache(dir.resolve("modules"), 1 << 20, Set.of());
        byte[] random = new byte[4096];
        new java.util.Random(1).nextBytes(random);
        random[0] = 'x';
        byte[] text = "hello, not PTX\n".getBytes();
        byte[] elf32 = new byte[64];
        System.arraycopy(new byte[] {0x7f, 'E', 'L', 'F', 1, 1, 1}, 0, elf32, 0, 7);
        for (byte[] junk : new byte[][] {random, text, elf32}) {
            String h = sha(junk);
            String why = c.admit(h, junk.length, "bob", offer(h, junk));
            assertTrue(why != null && why.contains("not a module image"), why == null ? "admitted junk" : why);
            assertTrue(c.lookup(h, junk.length, "bob").isEmpty());
        }
        byte[] indentedPtx = "\n\t.version 8.0\n.target sm_90\n".getBytes();
        byte[] archive = "!<arch>\n/               0           0     0     0       4         `\n".getBytes();
        byte[] elf = elfWithFatbinSection(fatbin(8, 1));
        for (byte[] image : new byte[][] {ptx("kernels"), indentedPtx, fatbin(32, 5), elf, archive}) {
            String h = sha(image);
            assertNull(c.admit(h, image.length, "bob", offer(h, image)));
            assertTrue(c.lookup(h, image.length, "bob").isPresent());
        }
    }
}
