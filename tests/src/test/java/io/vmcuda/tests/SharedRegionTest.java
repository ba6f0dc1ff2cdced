package io.vmcuda.tests;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * The shared-region form of the shared-memory ring (protocol/PROTOCOL.md "Shared regions"): the daemon
 * is told about a region ({@code shm.regions}, as an ivshmem BAR would be named in an appliance VM), the
 * client about the same memory ({@code VMCUDA_SHM_REGION}; here one file, which is what both VMs' BARs
 * are on the KVM host). A copy-heavy program must print exactly what it prints natively, its worker must
 * have attached a lane of the region, and every lane must be free again once the program has ended.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class SharedRegionTest {

    private static final long REGION_BYTES = 64L << 20;
    /** vmc_region.h: the header's owner words start at byte 40; up to 256 lanes. */
    private static final int OWNER_OFFSET = 40;

    private Path root;
    private Path work;
    private Path cudaLib;
    private Path region;
    private DaemonProcess daemon;

    @BeforeAll
    void start() throws Exception {
        root = Path.of(System.getProperty("vmcuda.repo.root", "..")).toAbsolutePath().normalize();
        Path programs = Path.of(System.getProperty("vmcuda.test.programs", "target/cuda")).toAbsolutePath();
        assumeTrue(Files.isExecutable(programs.resolve("bulk_paths")),
                "no CUDA test programs in " + programs + " (nvcc missing?): shared-region test skipped");
        work = Path.of(System.getProperty("vmcuda.test.work", "target/e2e")).toAbsolutePath().resolve("region");
        cudaLib = Path.of(System.getProperty("vmcuda.cuda.home", "/usr/local/cuda"), "lib64");
        Files.createDirectories(work);
        region = work.resolve("region.bin");
        Files.deleteIfExists(region);
        try (RandomAccessFile f = new RandomAccessFile(region.toFile(), "rw")) {
            f.setLength(REGION_BYTES); // all zero: no client has laid it out yet
        }
        daemon = DaemonProcess.start(root, work, Map.of("shm.regions", region.toString()), null, "daemon.log");
    }

    @AfterAll
    void stop() throws Exception {
        if (daemon != null) daemon.close();
    }

    @Test
    void copiesThroughALaneOfTheRegionMatchNativeAndGiveTheLaneBack() throws Exception {
        runThroughTheRegion("bulk_paths");
        assertTrue(workerLogs().contains("of shared region " + region + ", 4 slots of 1048576 bytes"),
                "the worker did not attach a lane of the region\n" + workerLogs());
        assertEveryLaneFree();
    }

    /** Threads still alive (connections still open) when the program ends must not keep their lanes. */
    @Test
    void lanesOfThreadsAliveAtExitGoBack() throws Exception {
        runThroughTheRegion("lanes_at_exit");
        assertEveryLaneFree();
    }

    private void runThroughTheRegion(String name) throws Exception {
        Path program = Path.of(System.getProperty("vmcuda.test.programs", "target/cuda")).toAbsolutePath()
                .resolve(name);
        Map<String, String> env = new HashMap<>();
        env.put("LD_LIBRARY_PATH", cudaLib.toString());
        env.put("VMCUDA_APPLIANCE", null);
        env.put("VMCUDA_TRANSPORT", null);
        env.put("VMCUDA_SHM_REGION", null);
        env.put("VMCUDA_TOKEN", daemon.token);
        ProgramRunner.Result nat = ProgramRunner.run(List.of(program.toString()), env, work, work.resolve("native-" + name));

        env.put("VMCUDA_TRANSPORT", "shm");
        env.put("VMCUDA_SHM_REGION", region.toString());
        env.put("VMCUDA_BLOCK_SIZE", "1048576"); // 4 slots of 1 MiB: 15 lanes fit in 64 MiB
        ProgramRunner.Result vm = ProgramRunner.run(List.of(root.resolve("bin/vmcuda").toString(), "run",
                "--appliance", "127.0.0.1:" + daemon.port, "--", program.toString()), env, work, work.resolve("vmcuda-" + name));
        String both = "\n=== native ===\n" + nat.describe() + "=== vmcuda (shared region) ===\n" + vm.describe()
                + "\n=== daemon ===\n" + daemon.logText();
        assertFalse(nat.timedOut() || vm.timedOut(), "a run timed out" + both);
        assertEquals(nat.exitCode(), vm.exitCode(), "exit codes differ" + both);
        assertEquals(nat.stdout(), vm.stdout(), "stdout differs" + both);
    }

    private void assertEveryLaneFree() throws IOException {
        ByteBuffer header = readHeader();
        assertEquals(0x31474552434d56L, header.getLong(0), "the client did not lay the region out");
        assertEquals(2, header.getInt(8), "the region is not marked ready");
        int lanes = header.getInt(12);
        assertEquals(15, lanes, "lanes of 4 x 1 MiB in a 64 MiB region (2 MiB header)");
        for (int lane = 0; lane < lanes; lane++) {
            assertEquals(0L, header.getLong(OWNER_OFFSET + 8 * lane), "lane " + lane + " still held after the program ended");
        }
    }

    private ByteBuffer readHeader() throws IOException {
        // The worker gives its lanes back when the connection closes, just after the client exits.
        ByteBuffer b = ByteBuffer.allocate(4096).order(ByteOrder.LITTLE_ENDIAN);
        for (int attempt = 0; attempt < 50; attempt++) {
            b.clear();
            try (FileChannel ch = FileChannel.open(region, StandardOpenOption.READ)) {
                ch.read(b, 0);
            }
            boolean allFree = true;
            for (int lane = 0; lane < 256; lane++) allFree &= b.getLong(OWNER_OFFSET + 8 * lane) == 0;
            if (allFree) break;
            try {
                Thread.sleep(100);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                break;
            }
        }
        return b;
    }

    private String workerLogs() throws IOException {
        StringBuilder all = new StringBuilder();
        try (Stream<Path> dirs = Files.list(daemon.stateDir.resolve("sessions"))) {
            for (Path d : dirs.toList()) {
                Path log = d.resolve("worker.log");
                if (Files.isRegularFile(log)) all.append(Files.readString(log));
            }
        }
        return all.toString();
    }
}
