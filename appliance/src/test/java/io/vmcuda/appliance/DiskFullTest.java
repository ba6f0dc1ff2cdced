package io.vmcuda.appliance;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.vmcuda.protocol.Wire;
import java.io.IOException;
import java.nio.file.FileStore;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The appliance's disk fills up while it caches a binary — a real full file system: the state directory
 * is a 1 MiB tmpfs (needs root; skipped otherwise). Too full for the upload announced (refused before it is sent),
 * full during the upload, full while the rewritten copy is written, and too full for a second upload besides what a
 * first one announced and has not sent: each time the session is refused with a
 * clear message, no upload file,
 * staging directory or half entry remains, the daemon keeps serving, and once there is room again the
 * same binary is admitted and runs.
 */
@Timeout(120)
class DiskFullTest {
    @TempDir
    Path tmp;
    private Path mount;

    private static int run(String... cmd) throws IOException, InterruptedException {
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        p.getInputStream().readAllBytes();
        return p.waitFor(30, TimeUnit.SECONDS) ? p.exitValue() : -1;
    }

    @AfterEach
    void unmount() throws Exception {
        if (mount != null) run("umount", "-l", mount.toString());
    }

    private static long free(Path p) throws IOException {
        FileStore fs = Files.getFileStore(p);
        return fs.getUsableSpace();
    }

    /** Fills the file system until exactly about {@code leave} bytes are free. */
    private static void fillLeaving(Path dir, long leave) throws IOException {
        Path filler = dir.resolve("filler");
        Files.deleteIfExists(filler);
        long n = free(dir) - leave;
        if (n > 0) Files.write(filler, new byte[(int) n]);
    }

    private static List<Path> cacheFiles(Path cache) throws IOException {
        try (Stream<Path> s = Files.walk(cache)) {
            return s.filter(Files::isRegularFile).toList();
        }
    }

    @Test
    void fullDiskRefusesCleanlyAndKeepsTheCacheConsistent() throws Exception {
        mount = tmp.resolve("state");
        Files.createDirectories(mount);
        assumeTrue(run("mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", mount.toString()) == 0,
                "cannot mount a tmpfs here (not root?): skipped");
        NativeFixtures fixtures = NativeFixtures.get();
        byte[] binary = Files.readAllBytes(fixtures.fakeWorker);
        try (DaemonHarness d = new DaemonHarness(mount, fixtures.workerLibDir(), TestInventory.none(), Map.of())) {
            Path cache = mount.resolve("cache");
            // 1. no room for the upload itself: refused before a byte of it is sent
            fillLeaving(mount, binary.length / 2);
            try (ProtocolClient c = d.connect()) {
                c.sendNewHello(binary, "diskfull");
                ProtocolClient.Reply r = c.readReply();
                assertEquals(Wire.HELLO_REFUSED, r.status());
                assertTrue(r.message().contains("the appliance's state disk has")
                        && r.message().contains("less than the " + binary.length + " bytes to upload"), r.message());
            }
            // ... and the disk fills while it is being sent
            fillLeaving(mount, binary.length + 8192);
            try (ProtocolClient c = d.connect()) {
                c.sendNewHello(binary, "diskfull");
                assertEquals(Wire.HELLO_SEND_BINARY, c.readReply().status());
                fillLeaving(mount, binary.length / 2);
                c.upload(binary, 4096);
                ProtocolClient.Reply r = c.readReply();
                assertEquals(Wire.HELLO_REFUSED, r.status());
                assertTrue(r.message().contains("appliance cannot store the binary: its disk is full"), r.message());
            }
            Thread.sleep(100);
            assertEquals(List.of(), cacheFiles(cache), "nothing half-written stays in the cache");

            // 2. the upload fits, the rewritten copy does not
            fillLeaving(mount, binary.length + 8192);
            try (ProtocolClient c = d.connect()) {
                c.sendNewHello(binary, "diskfull");
                assertEquals(Wire.HELLO_SEND_BINARY, c.readReply().status());
                c.upload(binary, 65536);
                ProtocolClient.Reply r = c.readReply();
                assertEquals(Wire.HELLO_REFUSED, r.status());
                assertTrue(r.message().contains("disk is full"), r.message());
            }
            Thread.sleep(100);
            assertEquals(List.of(), cacheFiles(cache), "no staging directory or half entry");

            // 3. room for one upload but not two: the first one's unwritten bytes are promised (an attack announced the
            //    free space and trickled it in, and the next tenant's program found a full disk)
            fillLeaving(mount, binary.length + binary.length / 2);
            try (ProtocolClient first = d.connect(); ProtocolClient second = d.connect()) {
                first.sendNewHello(binary, "diskfull");
                assertEquals(Wire.HELLO_SEND_BINARY, first.readReply().status());
                second.sendNewHello(binary, "diskfull");
                ProtocolClient.Reply r = second.readReply();
                assertEquals(Wire.HELLO_REFUSED, r.status(), r.message());
                assertTrue(r.message().contains("of which uploads in progress still need " + binary.length), r.message());
            }

            // 4. room again: the same binary is admitted and its worker starts
            Files.delete(mount.resolve("filler"));
            assertEquals(200, d.get("/status").statusCode());
            try (ProtocolClient c = d.connect()) {
                c.sendNewHello(binary, "diskfull");
                assertEquals(Wire.HELLO_SEND_BINARY, c.readReply().status());
                c.upload(binary, 65536);
                ProtocolClient.Reply r = c.readReply();
                assertEquals(Wire.HELLO_READY, r.status(), r.message());
            }
            assertEquals(4, cacheFiles(cache).size(), "original, rewritten, meta.properties, tenants: " + cacheFiles(cache));
        }
    }
}
