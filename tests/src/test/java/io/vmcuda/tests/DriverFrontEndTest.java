package io.vmcuda.tests;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * The driver front end (libcuda.so.1) end to end with the real daemon and its plain worker:
 * <ul>
 * <li>on this GPU-less appliance, a driver-API program and a static-cudart program open a session and
 * print what they print on a machine without a GPU;</li>
 * <li>with the worker's NVIDIA driver replaced by CI's stand-in (tests/driver/fake: host memory, and the
 * test programs' few kernels run on the CPU), the same programs run every check to the end over TCP and
 * over the shared-memory ring: modules from a cubin, PTX and a fat binary sent by content, launches with
 * every kind of parameter, 1-D, unified, 2-D and 3-D copies, contexts, events; and NVIDIA's own static
 * runtime on the client initialises through our private tables and integrity check. The stand-in proves
 * what vmcuda does around the driver, not the GPU: tests/gpu/run-on-device.sh runs the same programs on
 * NVIDIA's real driver and compares them with native runs.</li>
 * </ul>
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class DriverFrontEndTest {
    private Path root;
    private Path work;
    private Path driverDir;
    private Path cudaLib;

    @BeforeAll
    void locate() throws Exception {
        root = Path.of(System.getProperty("vmcuda.repo.root", "..")).toAbsolutePath().normalize();
        driverDir = Path.of(System.getProperty("vmcuda.test.driver", "target/driver")).toAbsolutePath();
        work = Path.of(System.getProperty("vmcuda.test.work", "target/e2e")).toAbsolutePath().resolve("driver");
        cudaLib = Path.of(System.getProperty("vmcuda.cuda.home", "/usr/local/cuda"), "lib64");
        assumeTrue(Files.isExecutable(driverDir.resolve("drv_api")),
                "no driver test programs in " + driverDir + " (nvcc missing? the build printed the reason)");
        Files.createDirectories(work);
    }

    private Map<String, String> env(DaemonProcess d, String transport) {
        Map<String, String> env = new HashMap<>();
        env.put("LD_LIBRARY_PATH", cudaLib.toString());
        env.put("VMCUDA_TOKEN", d.token);
        env.put("VMCUDA_TRANSPORT", transport);
        return env;
    }

    /** The daemon's config for workers that use CI's stand-in driver (the test is skipped without it). */
    private Map<String, String> standInConfig() {
        Path fake = driverDir.resolve("libfakecuda.so");
        assumeTrue(Files.isRegularFile(fake), "no " + fake);
        return Map.of("worker.extra_env", "VMCUDA_WORKER_LIBCUDA=" + fake, "worker.cuda_lib_dirs", cudaLib + ":" + driverDir);
    }

    private ProgramRunner.Result viaVmcuda(DaemonProcess d, String program, String transport) throws Exception {
        return ProgramRunner.run(List.of(root.resolve("bin/vmcuda").toString(), "run", "--appliance",
                "127.0.0.1:" + d.port, "--", driverDir.resolve(program).toString()), env(d, transport), driverDir,
                work.resolve(program + "-" + transport + "-" + d.port));
    }

    @Test
    void onAGpuLessApplianceProgramsSayWhatAMachineWithoutAGpuSays() throws Exception {
        try (DaemonProcess d = DaemonProcess.start(root, work, Map.of(), null, "daemon-gpuless.log")) {
            ProgramRunner.Result drv = viaVmcuda(d, "drv_api", "tcp");
            String ctx = "\n" + drv.describe() + "--- daemon ---\n" + d.logText();
            assertEquals("cuInit(0): CUDA_ERROR_NO_DEVICE (no CUDA-capable device is detected, 100)\n", drv.stdout(), ctx);
            assertEquals(2, drv.exitCode(), ctx);
            assertTrue(drv.stderr().contains("appliance has no usable GPU"), ctx);

            // the static runtime finds no driver on this appliance, as it finds none natively here
            Map<String, String> nativeEnv = new HashMap<>(env(d, null));
            nativeEnv.put("VMCUDA_TOKEN", null);
            ProgramRunner.Result nat = ProgramRunner.run(List.of(driverDir.resolve("rt_static").toString()), nativeEnv,
                    driverDir, work.resolve("rt_static-native"));
            ProgramRunner.Result rt = viaVmcuda(d, "rt_static", "tcp");
            String both = "\n=== native ===\n" + nat.describe() + "=== vmcuda ===\n" + rt.describe();
            assertTrue(nat.stdout().contains("cudaErrorInsufficientDriver"), both);
            assertEquals(nat.stdout(), rt.stdout(), both);
            assertEquals(nat.exitCode(), rt.exitCode(), both);

            // both were plain-worker sessions: no executable shipped
            DaemonProcess.await("session records", 10_000, () -> records(d).contains("\"rt_static\""));
            String records = records(d);
            assertTrue(records.contains("\"drv_api\"") && records.contains("\"worker\":\"plain\""), records);
            assertFalse(records.contains("\"worker\":\"program\""), records);
        }
    }

    /**
     * CUDA IPC is the operator's choice (worker.cuda_ipc): NVIDIA's driver opens a handle for any process of the
     * appliance, so by default an appliance with two or more tenants refuses it, and the program is told why; with
     * one tenant the call reaches the worker's driver.
     */
    @Test
    void cudaIpcIsServedOnlyWhereTheApplianceAllowsIt() throws Exception {
        Map<String, String> twoTenants = new HashMap<>(standInConfig());
        twoTenants.put("tenant.other.token_sha256", "cd".repeat(32));
        try (DaemonProcess d = DaemonProcess.start(root, work, twoTenants, null, "daemon-ipc-refused.log")) {
            ProgramRunner.Result r = viaVmcuda(d, "drv_ipc_policy", "tcp");
            assertEquals("cuIpcGetMemHandle: CUDA_ERROR_NOT_SUPPORTED\n", r.stdout(), r.describe());
            assertTrue(r.stderr().contains("worker.cuda_ipc"), r.describe());
        }
        try (DaemonProcess d = DaemonProcess.start(root, work, standInConfig(), null, "daemon-ipc-served.log")) {
            ProgramRunner.Result r = viaVmcuda(d, "drv_ipc_policy", "tcp");
            assertEquals("cuIpcGetMemHandle: CUDA_SUCCESS\n", r.stdout(), r.describe());
            assertFalse(r.stderr().contains("worker.cuda_ipc"), r.describe());
        }
    }

    /**
     * Shareable handles between two processes of one program (drv_shareable.c), each with its own worker: the
     * descriptors the parent gets are its own (the tickets of worker_shareable.c), go to the child over a Unix socket,
     * and the child's worker fetches the driver's descriptors from the parent's. Only a ticket that names an export
     * the parent's worker still holds imports anything.
     */
    @Test
    void shareableHandlesGoFromOneProcessToAnother() throws Exception {
        try (DaemonProcess d = DaemonProcess.start(root, work, standInConfig(), null, "daemon-shareable.log")) {
            ProgramRunner.Result r = viaVmcuda(d, "drv_shareable", "tcp");
            String ctx = "\n" + r.describe() + "--- workers ---\n" + workerLogs(d);
            assertEquals(String.join("\n", List.of(
                    "parent: export the allocation: CUDA_SUCCESS",
                    "parent: export it as a fabric handle: CUDA_ERROR_NOT_SUPPORTED",
                    "parent: export it again 1100 times: CUDA_SUCCESS",
                    "parent: export the pool: CUDA_SUCCESS",
                    "child: import the allocation: CUDA_SUCCESS",
                    "child: an allocation handle: ok",
                    "child: import the pool: CUDA_SUCCESS",
                    "child: a pool: ok",
                    "child: import the pool's descriptor as an allocation: CUDA_ERROR_INVALID_VALUE",
                    "child: import a pipe: CUDA_ERROR_INVALID_VALUE",
                    "child: the descriptor's contents read: ok",
                    "child: import a forged copy: CUDA_ERROR_INVALID_VALUE",
                    "child: import after the exporter released it: CUDA_ERROR_INVALID_VALUE",
                    "child exit: 0", "")), r.stdout(), ctx);
            assertEquals(0, r.exitCode(), ctx);
            assertTrue(r.stderr().contains("POSIX file descriptors only"), ctx);
            assertTrue(r.stderr().contains("holds nothing under that handle"), ctx);
        }
    }

    /**
     * Whoever binds a vanished exporter's socket name (the names are listed in /dev/shm) and answers an importer
     * learns nothing of the export's secret and cannot make the importer take its word: the importer asks by an id and
     * a nonce and wants a proof only the secret gives (an attack helper's squatter got the secret from the first
     * version). Here the test itself squats, after the exporting program and its session have ended.
     */
    @Test
    void aSocketBoundInAVanishedExportersPlaceLearnsNoSecretAndIsNotBelieved() throws Exception {
        try (DaemonProcess d = DaemonProcess.start(root, work, standInConfig(), null, "daemon-shareable-squat.log")) {
            Path ticket = work.resolve("squat.ticket");
            Files.deleteIfExists(ticket);
            Path program = driverDir.resolve("drv_shareable");
            ProgramRunner.Result exported = ProgramRunner.run(List.of(root.resolve("bin/vmcuda").toString(), "run", "--appliance",
                    "127.0.0.1:" + d.port, "--", program.toString(), "export-ticket", ticket.toString()), env(d, "tcp"),
                    driverDir, work.resolve("squat-export"));
            assertEquals("export: CUDA_SUCCESS\n", exported.stdout(), exported.describe());
            // the descriptor's contents (drv_shareable.c): 16 bytes of magic, the kind, then the ticket: boot id,
            // socket id, secret
            byte[] record = Files.readAllBytes(ticket);
            assertEquals(84, record.length, "ticket record");
            StringBuilder id = new StringBuilder();
            for (int i = 36; i < 52; i++) id.append(String.format("%02x", record[i]));
            byte[] secret = java.util.Arrays.copyOfRange(record, 52, 84);
            Path socket = Path.of("/dev/shm/vmcuda-shareable." + id);
            DaemonProcess.await("the exporter's socket gone with its session", 15_000, () -> !Files.exists(socket));
            try (java.nio.channels.ServerSocketChannel impostor =
                         java.nio.channels.ServerSocketChannel.open(java.net.StandardProtocolFamily.UNIX)) {
                impostor.bind(java.net.UnixDomainSocketAddress.of(socket));
                Files.setPosixFilePermissions(socket, java.nio.file.attribute.PosixFilePermissions.fromString("rw-rw-rw-"));
                java.util.concurrent.CompletableFuture<byte[]> heard = java.util.concurrent.CompletableFuture.supplyAsync(() -> {
                    try (java.nio.channels.SocketChannel importer = impostor.accept()) {
                        java.nio.ByteBuffer request = java.nio.ByteBuffer.allocate(64);
                        while (request.hasRemaining() && importer.read(request) >= 0) { }
                        java.nio.ByteBuffer yes = java.nio.ByteBuffer.allocate(33); // "found", and a proof of zeros
                        while (yes.hasRemaining()) importer.write(yes);
                        return java.util.Arrays.copyOf(request.array(), request.position());
                    } catch (java.io.IOException e) {
                        throw new java.io.UncheckedIOException(e);
                    }
                });
                ProgramRunner.Result imported = ProgramRunner.run(List.of(root.resolve("bin/vmcuda").toString(), "run",
                        "--appliance", "127.0.0.1:" + d.port, "--", program.toString(), "import-ticket", ticket.toString()),
                        env(d, "tcp"), driverDir, work.resolve("squat-import"));
                String ctx = "\n" + imported.describe() + "--- workers ---\n" + workerLogs(d);
                assertEquals("import: CUDA_ERROR_INVALID_VALUE\n", imported.stdout(), ctx);
                byte[] request = heard.get(30, java.util.concurrent.TimeUnit.SECONDS);
                assertEquals(64, request.length, ctx);
                for (int at = 0; at + secret.length <= request.length; at++)
                    assertFalse(java.util.Arrays.equals(request, at, at + secret.length, secret, 0, secret.length),
                            "the secret reached the impostor" + ctx);
                assertTrue(workerLogs(d).contains("answered without the exporter's proof"), ctx);
            } finally {
                Files.deleteIfExists(socket);
            }
        }
    }

    /** drv_shareable hold-ticket in its own session, in the background: it exports and waits for TICKET.done. */
    private java.util.concurrent.CompletableFuture<ProgramRunner.Result> holdTicket(DaemonProcess d, Path ticket, String runDir) {
        return java.util.concurrent.CompletableFuture.supplyAsync(() -> {
            try {
                return ProgramRunner.run(List.of(root.resolve("bin/vmcuda").toString(), "run", "--appliance",
                        "127.0.0.1:" + d.port, "--", driverDir.resolve("drv_shareable").toString(), "hold-ticket",
                        ticket.toString()), env(d, "tcp"), driverDir, work.resolve(runDir));
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
        });
    }

    /**
     * An exporter's socket in /dev/shm is reachable by anything of the workers' group; a process that is no worker
     * (here the test itself, as root, while sandboxed workers have uids of their own) is hung up on at once, without an
     * answer and without holding the exporter's one answering thread.
     */
    @Test
    void anExporterHangsUpOnAProcessThatIsNoWorker() throws Exception {
        assumeTrue(DaemonProcess.currentUid() == 0, "workers have uids of their own only when sandboxed (root)");
        try (DaemonProcess d = DaemonProcess.start(root, work, standInConfig(), null, "daemon-shareable-peer.log")) {
            Path ticket = work.resolve("peer.ticket");
            Files.deleteIfExists(ticket); // a rerun's work directory still has the last one's
            Files.deleteIfExists(Path.of(ticket + ".done"));
            java.util.concurrent.CompletableFuture<ProgramRunner.Result> holder = holdTicket(d, ticket, "peer-export");
            try {
                DaemonProcess.await("the ticket written", 60_000, () -> Files.exists(ticket));
                byte[] record = Files.readAllBytes(ticket);
                StringBuilder id = new StringBuilder();
                for (int i = 36; i < 52; i++) id.append(String.format("%02x", record[i]));
                try (java.nio.channels.SocketChannel knock = java.nio.channels.SocketChannel.open(
                        java.net.UnixDomainSocketAddress.of("/dev/shm/vmcuda-shareable." + id))) {
                    int answered;
                    try {
                        knock.write(java.nio.ByteBuffer.allocate(64));
                        answered = knock.read(java.nio.ByteBuffer.allocate(33));
                    } catch (java.io.IOException hungUp) {
                        answered = -1; // hung up before the request went, or with it unread (a reset, a broken pipe)
                    }
                    assertEquals(-1, answered, "the exporter answered a process that is no worker");
                }
            } finally {
                Files.writeString(Path.of(ticket + ".done"), "");
            }
            ProgramRunner.Result held = holder.get(60, java.util.concurrent.TimeUnit.SECONDS);
            assertEquals("export: CUDA_SUCCESS\n", held.stdout(), held.describe() + "--- workers ---\n" + workerLogs(d));
        }
    }

    /**
     * Another tenant's worker can reach an exporter's socket (it is of the workers' group and uid range). One that
     * keeps dozens of connections open and says nothing on them, connecting again whenever it is hung up on, delays
     * no import, nor sixteen at once from one process: the exporter answers a request that comes with its connection
     * at once and hears others side by side, a few per uid, each for a second at most (the first version's
     * one-at-a-time loop let such a holder make imports time out).
     */
    @Test
    void aWorkerThatHoldsAnExportersConnectionsDelaysNoImport() throws Exception {
        assumeTrue(DaemonProcess.currentUid() == 0, "workers have uids of their own only when sandboxed (root)");
        Path setpriv = Path.of("/usr/bin/setpriv");
        assumeTrue(Files.isExecutable(setpriv), "no " + setpriv);
        Map<String, String> config = new HashMap<>(standInConfig());
        config.put("worker.uid_range", "6300000-6300999");
        try (DaemonProcess d = DaemonProcess.start(root, work, config, null, "daemon-shareable-hold.log")) {
            Path ticket = work.resolve("hold.ticket");
            Files.deleteIfExists(ticket);
            Files.deleteIfExists(Path.of(ticket + ".done"));
            java.util.concurrent.CompletableFuture<ProgramRunner.Result> exporter = holdTicket(d, ticket, "hold-export");
            Process holder = null;
            try {
                DaemonProcess.await("the ticket written", 60_000, () -> Files.exists(ticket));
                byte[] record = Files.readAllBytes(ticket);
                StringBuilder id = new StringBuilder();
                for (int i = 36; i < 52; i++) id.append(String.format("%02x", record[i]));
                Path socket = Path.of("/dev/shm/vmcuda-shareable." + id);
                int group = (Integer) Files.getAttribute(socket, "unix:gid");
                // a uid of the range that no session has (sessions take the lowest free ones), in the sockets' group
                holder = new ProcessBuilder(setpriv.toString(), "--reuid=6300999", "--regid=" + group, "--clear-groups",
                        driverDir.resolve("hold_connections").toString(), socket.toString(), "60", "8")
                        .redirectErrorStream(true).start();
                java.io.BufferedReader said = new java.io.BufferedReader(new java.io.InputStreamReader(holder.getInputStream()));
                assertEquals("holding", said.readLine(), "hold_connections did not start");
                long start = System.nanoTime();
                ProgramRunner.Result imported = ProgramRunner.run(List.of(root.resolve("bin/vmcuda").toString(), "run",
                        "--appliance", "127.0.0.1:" + d.port, "--", driverDir.resolve("drv_shareable").toString(),
                        "import-ticket", ticket.toString()), env(d, "tcp"), driverDir, work.resolve("hold-import"));
                double seconds = (System.nanoTime() - start) / 1e9;
                String ctx = "\nimport took " + seconds + " s\n" + imported.describe() + "--- workers ---\n" + workerLogs(d);
                assertEquals("import: CUDA_SUCCESS\n", imported.stdout(), ctx);
                // sixteen importers of one process (one uid) at once, more than one uid may have waiting: all answered
                ProgramRunner.Result many = ProgramRunner.run(List.of(root.resolve("bin/vmcuda").toString(), "run",
                        "--appliance", "127.0.0.1:" + d.port, "--", driverDir.resolve("drv_shareable").toString(),
                        "import-ticket-16", ticket.toString()), env(d, "tcp"), driverDir, work.resolve("hold-import-16"));
                assertEquals("imports: 16 of 16 CUDA_SUCCESS\n", many.stdout(), many.describe() + "--- workers ---\n" + workerLogs(d));
                // the holder was at it all along: hung up on past its uid's share and after each silent second
                assertTrue(holder.waitFor(60, java.util.concurrent.TimeUnit.SECONDS), "hold_connections did not end");
                String summary = said.readLine();
                assertTrue(summary != null && summary.matches("made \\d+ connections, [1-9]\\d* hung up on"), summary + ctx);
            } finally {
                if (holder != null) holder.destroyForcibly();
                Files.writeString(Path.of(ticket + ".done"), "");
            }
            ProgramRunner.Result held = exporter.get(60, java.util.concurrent.TimeUnit.SECONDS);
            assertEquals("export: CUDA_SUCCESS\n", held.stdout(), held.describe() + "--- workers ---\n" + workerLogs(d));
        }
    }

    @Test
    void againstTheStandInDriverEveryCheckRunsToTheEnd() throws Exception {
        Map<String, String> config = standInConfig();
        String drvExpected = Files.readString(root.resolve("tests/driver/drv_api.expected"));
        String rtExpected = Files.readString(root.resolve("tests/driver/rt_static.expected"));
        try (DaemonProcess d = DaemonProcess.start(root, work, config, null, "daemon-standin.log")) {
            for (String transport : List.of("tcp", "shm")) {
                ProgramRunner.Result drv = viaVmcuda(d, "drv_api", transport);
                String ctx = " over " + transport + "\n" + drv.describe() + "--- daemon ---\n" + d.logText();
                assertEquals(drvExpected, drv.stdout(), "drv_api" + ctx);
                assertEquals(0, drv.exitCode(), "drv_api" + ctx);
                if (transport.equals("tcp")) {
                    // the first session's uploads (a cubin, PTX, a fat binary) go to the module cache when it ends
                    DaemonProcess.await("module images cached", 10_000,
                            () -> d.logText().contains("module image(s) cached for tenant e2e"));
                } else {
                    // ... and the second session gets them from there: the client sends none of them again
                    String logs = workerLogs(d);
                    assertTrue(logs.contains("from the appliance's cache"), logs);
                    String metrics = d.get("/metrics").body();
                    assertTrue(metrics.matches("(?s).*\nvmcuda_module_cache_hits_total [1-9].*"), metrics);
                    assertTrue(metrics.matches("(?s).*\nvmcuda_module_cache_bytes_saved_total [1-9].*"), metrics);
                }
                ProgramRunner.Result rt = viaVmcuda(d, "rt_static", transport);
                ctx = " over " + transport + "\n" + rt.describe() + "--- daemon ---\n" + d.logText();
                assertEquals(rtExpected, rt.stdout(), "rt_static" + ctx);
                assertEquals(0, rt.exitCode(), "rt_static" + ctx);
            }
            // pinned_in_region: drv_api's page-locked memory becomes memory the client shares with its worker
            // (co-located), and the copies from and to it are done by the worker's driver with no byte on the
            // connection; the program prints exactly the same
            Map<String, String> shared = new HashMap<>(env(d, "shm"));
            shared.put("VMCUDA_PINNED_IN_REGION", "1");
            shared.put("VMCUDA_STATS", "1"); // says which calls went to the worker
            ProgramRunner.Result p = ProgramRunner.run(List.of(root.resolve("bin/vmcuda").toString(), "run", "--appliance",
                    "127.0.0.1:" + d.port, "--", driverDir.resolve("drv_api").toString()), shared, driverDir,
                    work.resolve("drv_api-pinned-in-region"));
            String pctx = "\n" + p.describe() + "--- workers ---\n" + workerLogs(d);
            assertEquals(drvExpected, p.stdout(), pctx);
            assertEquals(0, p.exitCode(), pctx);
            assertTrue(workerLogs(d).contains("mapped host memory: 1048576 bytes"), pctx);
            assertTrue(p.stderr().matches("(?s).*vmcuda stats: +3 (a)?sync +vmc_drv_MappedCopy.*")
                    || p.stderr().matches("(?s).*vmcuda stats: +[12] async +vmc_drv_MappedCopy.*"), pctx);

            // cuStreamIsCapturing on the default streams before any capture is answered by the client (PyTorch asks
            // it before nearly every operation); once a capture begins (here refused by the stand-in driver, which
            // does not capture), every query goes to the worker: 13 of the 113 reach it
            Map<String, String> stats = new HashMap<>(env(d, "shm"));
            stats.put("VMCUDA_STATS", "1");
            ProgramRunner.Result cq = ProgramRunner.run(List.of(root.resolve("bin/vmcuda").toString(), "run", "--appliance",
                    "127.0.0.1:" + d.port, "--", driverDir.resolve("drv_capture_query").toString()), stats, driverDir,
                    work.resolve("drv_capture_query"));
            assertEquals(Files.readString(root.resolve("tests/driver/drv_capture_query.expected")), cq.stdout(), cq.describe());
            assertEquals(0, cq.exitCode(), cq.describe());
            assertTrue(cq.stderr().matches("(?s).*vmcuda stats: +13 sync +cuStreamIsCapturing\\n.*"), cq.describe());

            // two threads taking turns on one stream: the worker runs their launches in the order they were
            // issued (the stand-in driver runs a launch when the worker dispatches it, so any reordering shows)
            // a fork after the GPU was used: the child's calls fail, the parent's go on intact (over the call
            // pipe too, where a child writing into the parent's connection would corrupt it)
            String forkExpected = Files.readString(root.resolve("tests/driver/drv_fork.expected"));
            for (String transport : List.of("tcp", "shm")) {
                ProgramRunner.Result f = viaVmcuda(d, "drv_fork", transport);
                assertEquals(forkExpected, f.stdout(), "drv_fork over " + transport + "\n" + f.describe());
                assertEquals(0, f.exitCode(), f.describe());
            }
            String threadsExpected = Files.readString(root.resolve("tests/driver/drv_threads.expected"));
            for (String transport : List.of("tcp", "shm")) {
                ProgramRunner.Result t2 = viaVmcuda(d, "drv_threads", transport);
                assertEquals(threadsExpected, t2.stdout(), "drv_threads over " + transport + "\n" + t2.describe());
                assertEquals(0, t2.exitCode(), t2.describe());
            }

            // mapped host memory, allocated and registered: co-located, kernels write the client's own pages;
            // over TCP it is refused with a line saying why
            String mapExpected = Files.readString(root.resolve("tests/driver/drv_hostmap.expected"));
            ProgramRunner.Result m = viaVmcuda(d, "drv_hostmap", "shm");
            String mctx = "\n" + m.describe() + "--- workers ---\n" + workerLogs(d);
            assertEquals(mapExpected, m.stdout(), mctx);
            assertEquals(0, m.exitCode(), mctx);
            // over TCP allocated mapped memory is the worker's, mirrored here at synchronising calls: the kernel's
            // writes are seen after cuCtxSynchronize; registering the program's own memory as mapped is refused
            ProgramRunner.Result mt = viaVmcuda(d, "drv_hostmap", "tcp");
            assertEquals(2, mt.exitCode(), mt.describe());
            assertTrue(mt.stdout().contains("a kernel wrote allocated mapped memory: ok\na kernel wrote part of it: ok"),
                    mt.describe());
            assertTrue(mt.stdout().contains("cuMemHostRegister_v2(r, N * sizeof(float), CU_MEMHOSTREGISTER_DEVICEMAP): "
                    + "CUDA_ERROR_NOT_SUPPORTED"), mt.describe());
            assertTrue(mt.stderr().contains("mapped host memory) is not supported"), mt.describe());

            // VMCUDA_TRACE=all: each driver call the static runtime makes is named on stderr with its result,
            // the bad launches drv_api tries among them, and the program's own output does not change
            Map<String, String> traced = new HashMap<>(env(d, "tcp"));
            traced.put("VMCUDA_TRACE", "all");
            ProgramRunner.Result t = ProgramRunner.run(List.of(root.resolve("bin/vmcuda").toString(), "run", "--appliance",
                    "127.0.0.1:" + d.port, "--", driverDir.resolve("rt_static").toString()), traced, driverDir,
                    work.resolve("rt_static-traced"));
            String ctx = "\n" + t.describe();
            assertEquals(rtExpected, t.stdout(), ctx);
            assertTrue(t.stderr().contains("vmcuda trace: cuMemAlloc_v2 -> CUDA_SUCCESS (0)"), ctx);
            assertTrue(t.stderr().contains("vmcuda trace: cuLibraryLoadData -> CUDA_SUCCESS (0)"), ctx);

            // The hash of the program's fat binary (mapped read-only from the executable) is remembered in the
            // user's cache by file identity; a damaged line costs one failed upload, then it is corrected
            Path home = Files.createDirectories(work.resolve("home-" + d.port));
            Map<String, String> withHome = new HashMap<>(env(d, "tcp"));
            withHome.put("HOME", home.toString());
            withHome.put("XDG_CACHE_HOME", null);
            Path hashes = home.resolve(".cache/vmcuda/module-sha256");
            ProgramRunner.Result first = ProgramRunner.run(List.of(root.resolve("bin/vmcuda").toString(), "run",
                    "--appliance", "127.0.0.1:" + d.port, "--", driverDir.resolve("rt_static").toString()), withHome,
                    driverDir, work.resolve("rt_static-hash-1"));
            assertEquals(rtExpected, first.stdout(), first.describe());
            String lines = Files.readString(hashes);
            assertTrue(lines.matches("(\\d+ \\d+ \\d+ -?\\d+ \\d+ \\d+ \\d+ [0-9a-f]{64}\n)+"), lines);
            assertEquals("rw-------", java.nio.file.attribute.PosixFilePermissions.toString(Files.getPosixFilePermissions(hashes)));
            String damaged = lines.replaceAll("[0-9a-f]{64}\n", "0".repeat(64) + "\n");
            Files.writeString(hashes, damaged);
            ProgramRunner.Result second = ProgramRunner.run(List.of(root.resolve("bin/vmcuda").toString(), "run",
                    "--appliance", "127.0.0.1:" + d.port, "--", driverDir.resolve("rt_static").toString()), withHome,
                    driverDir, work.resolve("rt_static-hash-2"));
            assertEquals(rtExpected, second.stdout(), second.describe());
            assertEquals(0, second.exitCode(), second.describe());
            String corrected = Files.readString(hashes);
            for (String line : lines.split("\n"))
                assertTrue(corrected.endsWith(line + "\n") || corrected.contains(line + "\n"), "not corrected: " + line + " in\n" + corrected);
        }
    }

    /**
     * vmcudad cache seed: the operator puts a CUDA binary's module images into the module cache for every
     * tenant, and a tenant that never uploaded them runs the program without sending any: the seed finds
     * the very images (and hashes) the client asks for.
     */
    /**
     * NVML through vmcuda's front end (libnvidia-ml.so.1): the session's GPU with the identity the driver
     * front end gives (the stand-in's name, UUID, PCI location), the telemetry the appliance's NVML gives
     * (none with the stand-in: NOT_SUPPORTED, memory from the CUDA driver once a context exists), NVML's
     * reference-counted init and its error texts; the same program on the GPU machine is compared with
     * NVIDIA's NVML (tests/gpu/run-driver-on-device.sh).
     */
    @Test
    void nvmlAnswersFromTheSession() throws Exception {
        try (DaemonProcess d = DaemonProcess.start(root, work, standInConfig(), null, "daemon-nvml.log")) {
            for (String mode : List.of("", "--context")) {
                List<String> cmd = new java.util.ArrayList<>(List.of(root.resolve("bin/vmcuda").toString(), "run",
                        "--appliance", "127.0.0.1:" + d.port, "--", driverDir.resolve("nvml_probe").toString()));
                if (!mode.isEmpty()) cmd.add(mode);
                ProgramRunner.Result r = ProgramRunner.run(cmd, env(d, "tcp"), driverDir, work.resolve("nvml_probe" + mode));
                String ctx = "\n" + r.describe() + "--- workers ---\n" + workerLogs(d);
                String expected = Files.readString(root.resolve("tests/driver/nvml_probe" + mode.replace("--", "-") + ".expected"));
                assertEquals(expected, r.stdout(), ctx);
                assertEquals(0, r.exitCode(), ctx);
            }
            // the worker said why telemetry is not there (the stand-in has no NVML beside it)
            assertTrue(workerLogs(d).contains("nvml: NVIDIA's libnvidia-ml.so.1 is not available here"), workerLogs(d));
        }
        // no GPU on the appliance: NVML says what it says on a machine without NVIDIA's driver, and vmcuda why
        try (DaemonProcess d = DaemonProcess.start(root, work, Map.of(), null, "daemon-nvml-gpuless.log")) {
            ProgramRunner.Result r = viaVmcuda(d, "nvml_probe", "tcp");
            String ctx = "\n" + r.describe();
            assertEquals("before init, count: Uninitialized\nnvmlInit_v2: Driver Not Loaded\n", r.stdout(), ctx);
            assertEquals(1, r.exitCode(), ctx);
            assertTrue(r.stderr().contains("vmcuda: NVML has no GPU to report"), ctx);
        }
    }

    @Test
    void seededModuleImagesAreNotSentEvenTheFirstTime() throws Exception {
        Map<String, String> config = standInConfig();
        try (DaemonProcess d = DaemonProcess.start(root, work, config, null, "daemon-seeded.log")) {
            ProgramRunner.Result seed = ProgramRunner.run(List.of(root.resolve("bin/vmcudad").toString(), "cache", "seed",
                    "--state-dir", d.stateDir.toString(), driverDir.resolve("rt_static").toString()), Map.of(), work,
                    work.resolve("seed-" + d.port));
            assertEquals(0, seed.exitCode(), seed.describe());
            assertTrue(seed.stdout().contains("module image(s)"), seed.describe());
            ProgramRunner.Result rt = viaVmcuda(d, "rt_static", "tcp");
            assertEquals(Files.readString(root.resolve("tests/driver/rt_static.expected")), rt.stdout(), rt.describe());
            String logs = workerLogs(d);
            assertTrue(logs.contains("from the appliance's cache"), logs);
            assertFalse(logs.contains("received from the client"), "nothing sent: " + logs);
        }
    }

    /** vmcuda doctor PROGRAM says which front end serves a program, from its file alone. */
    @Test
    void doctorSaysWhichFrontEndServesAProgram() throws Exception {
        Path cuda12 = Files.createDirectories(work.resolve("cuda12"));
        Files.writeString(cuda12.resolve("empty.c"), "int cuda12_stand_in;\n");
        Files.writeString(cuda12.resolve("main.c"), "extern int cuda12_stand_in;\nint main(void) { return cuda12_stand_in; }\n");
        ProgramRunner.Result lib = ProgramRunner.run(List.of("gcc", "-shared", "-fPIC", "-o", "libcudart.so.12",
                "-Wl,-soname,libcudart.so.12", "empty.c"), Map.of(), cuda12, cuda12.resolve("lib"));
        ProgramRunner.Result prog = ProgramRunner.run(List.of("gcc", "-o", "old_runtime", "main.c", "-L.", "-l:libcudart.so.12"),
                Map.of(), cuda12, cuda12.resolve("prog"));
        assertEquals(0, lib.exitCode() + prog.exitCode(), lib.describe() + prog.describe());
        Map<String, String> expected = Map.of(
                driverDir.resolve("rt_static").toString(), "the CUDA runtime is inside it (nvcc's default, static): the driver front end serves it",
                driverDir.resolve("drv_api").toString(), "linked with libcuda.so.1 (the driver API): the driver front end serves it",
                root.resolve("tests/target/cuda/arrays").toString(), "linked with libcudart.so.13: the runtime front end serves it",
                root.resolve("tests/gpu/framework_probe.py").toString(), "a script (Python)",
                cuda12.resolve("old_runtime").toString(), "an older CUDA runtime (libcudart.so.12 or before), which vmcuda does not");
        for (Map.Entry<String, String> e : expected.entrySet()) {
            if (!Files.exists(Path.of(e.getKey()))) continue; // tests/target/cuda needs nvcc
            ProgramRunner.Result r = ProgramRunner.run(List.of(root.resolve("bin/vmcuda").toString(), "doctor",
                    "--appliance", "127.0.0.1:1", e.getKey()), Map.of(), work, work.resolve("doctor-" + Path.of(e.getKey()).getFileName()));
            String section0 = r.stdout().replaceAll("\n   ", " ");
            assertTrue(section0.contains(e.getValue()), e.getKey() + ":\n" + r.describe());
        }
    }

    private static String workerLogs(DaemonProcess d) throws Exception {
        StringBuilder b = new StringBuilder();
        try (java.util.stream.Stream<Path> dirs = Files.list(d.stateDir.resolve("sessions"))) {
            for (Path dir : dirs.sorted().toList()) {
                Path log = dir.resolve("worker.log");
                if (Files.exists(log)) b.append(Files.readString(log));
            }
        }
        return b.toString();
    }

    /**
     * The program's own exit status reaches the session's record and the daemon's log (its worker exits 0 either
     * way): 3 as 3, 0 as 0, and a program killed by a signal as "not reported" (null).
     */
    @Test
    void theProgramsExitStatusIsRecordedNotOnlyTheWorkers() throws Exception {
        Map<String, String> config = standInConfig();
        assumeTrue(Files.isExecutable(driverDir.resolve("drv_exit")), "drv_exit not built");
        try (DaemonProcess d = DaemonProcess.start(root, work, config, null, "daemon-exit-status.log")) {
            String[] endings = {"3", "0", "kill"};
            int[] expectedCodes = {3, 0, 128 + 9};
            StringBuilder ctx = new StringBuilder();
            for (int i = 0; i < endings.length; i++) {
                ProgramRunner.Result r = ProgramRunner.run(List.of(root.resolve("bin/vmcuda").toString(), "run",
                        "--appliance", "127.0.0.1:" + d.port, "--", driverDir.resolve("drv_exit").toString(), endings[i]),
                        env(d, "tcp"), driverDir, work.resolve("drv_exit-" + endings[i]));
                ctx.append(r.describe());
                assertEquals("drv_exit: used the GPU, ending with " + endings[i] + "\n", r.stdout(), ctx.toString());
                assertEquals(expectedCodes[i], r.exitCode(), ctx.toString());
            }
            DaemonProcess.await("three drv_exit records", 10_000,
                    () -> records(d).lines().filter(l -> l.contains("\"program\":\"drv_exit\"")).count() == 3);
            List<String> recs = records(d).lines().filter(l -> l.contains("\"program\":\"drv_exit\"")).toList();
            String all = String.join("\n", recs) + "\n" + ctx + "--- daemon ---\n" + d.logText();
            assertTrue(recs.get(0).contains("\"exit_status\":0,\"program_exit_status\":3"), all);
            assertTrue(recs.get(1).contains("\"exit_status\":0,\"program_exit_status\":0"), all);
            assertTrue(recs.get(2).contains("\"program_exit_status\":null"), all);
            assertTrue(d.logText().contains("drv_exit exited with status 3; worker exit status 0"), all);
            assertTrue(d.logText().contains("drv_exit (no exit status reported: killed, _exit(), or its exiting thread made no CUDA call)"), all);
        }
    }

    /**
     * A worker that crashes (here the stand-in driver faults in cuCtxSynchronize, as a faulty driver would) leaves
     * its signal and stack in the session's log, and the client loses its session with the worker's death.
     */
    @Test
    void aCrashingWorkerLeavesItsSignalAndStackInTheSessionLog() throws Exception {
        Map<String, String> config = new HashMap<>(standInConfig());
        config.put("worker.extra_env", config.get("worker.extra_env") + " FAKE_LIBCUDA_CRASH=1");
        try (DaemonProcess d = DaemonProcess.start(root, work, config, null, "daemon-crash.log")) {
            ProgramRunner.Result r = viaVmcuda(d, "drv_api", "tcp");
            DaemonProcess.await("the crash recorded", 10_000, () -> d.logText().contains("worker killed by signal 11"));
            String logs = workerLogs(d);
            String ctx = "\n" + r.describe() + "--- workers ---\n" + logs + "--- daemon ---\n" + d.logText();
            assertNotEquals(0, r.exitCode(), ctx);
            assertTrue(logs.matches("(?s).*crashed: signal 11, address 0x10, code 1, thread [0-9]+; its stack:\n.*"), ctx);
            assertTrue(logs.contains("libfakecuda.so("), ctx); // the frame of the faulting function
            assertTrue(logs.contains("libvmcuda-worker.so("), ctx); // and the worker's below it
        }
    }

    private static String records(DaemonProcess d) throws Exception {
        Path p = d.stateDir.resolve("sessions.jsonl");
        return Files.exists(p) ? Files.readString(p) : "";
    }
}
