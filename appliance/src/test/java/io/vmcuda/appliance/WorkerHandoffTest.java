package io.vmcuda.appliance;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.vmcuda.protocol.Wire;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The socket hand-off end to end: a gcc-built fake worker is uploaded as the client's binary, rewritten by
 * the real rewriter, started with a stub libvmcuda-worker.so, connects back, and receives the client's TCP
 * connection as a descriptor. The client must see READY and then the worker's MANIFEST on the same
 * connection, and keep talking to the worker after the daemon has let go of its copy.
 */
@Timeout(120)
class WorkerHandoffTest {
    private static NativeFixtures fixtures;
    private static byte[] binary;

    @TempDir
    Path state;

    @BeforeAll
    static void build() throws Exception {
        fixtures = NativeFixtures.get();
        binary = Files.readAllBytes(fixtures.fakeWorker);
    }

    private DaemonHarness daemon(io.vmcuda.scheduler.GpuInventory inv, Map<String, String> config) throws Exception {
        return new DaemonHarness(state, fixtures.workerLibDir(), inv, config);
    }

    /** NEW session up to the MANIFEST; returns the READY reply. */
    private static ProtocolClient.Reply openSession(ProtocolClient c, String program) throws Exception {
        c.sendNewHello(binary, program);
        ProtocolClient.Reply r = c.readReply();
        if (r.status() == Wire.HELLO_SEND_BINARY) {
            c.upload(binary, 4096);
            r = c.readReply();
        }
        assertEquals(Wire.HELLO_READY, r.status(), r.message());
        assertManifest(c.readFrame());
        return r;
    }

    private static void assertManifest(ProtocolClient.Frame m) {
        assertTrue(m != null, "connection closed before the MANIFEST");
        assertEquals(Wire.TYPE_MANIFEST, m.type());
        assertEquals(12, m.payload().length, "0 functions, 0 variables, the worker's uid");
        assertArrayEquals(new byte[8], java.util.Arrays.copyOf(m.payload(), 8), "0 functions, 0 variables");
    }

    private static void assertEcho(ProtocolClient c, String text) throws Exception {
        byte[] b = text.getBytes(StandardCharsets.UTF_8);
        c.sendRaw(b);
        assertEquals(text, ProtocolClient.text(c.readExactly(b.length)));
    }

    /**
     * A client that ships no executable (binary size 0: the driver front end's programs) gets the appliance's
     * own plain worker at once, with no upload: READY, then its empty MANIFEST, and /status says "plain".
     */
    @Test
    void sessionWithoutABinaryGetsThePlainWorker() throws Exception {
        Path native_ = Path.of("target/native").toAbsolutePath();
        org.junit.jupiter.api.Assumptions.assumeTrue(Files.isExecutable(native_.resolve("vmcuda-worker")),
                "the plain worker is built by this module's make step: " + native_);
        try (DaemonHarness d = new DaemonHarness(state, native_, TestInventory.none(), Map.of());
             ProtocolClient c = d.connect()) {
            c.sendFrame(Wire.TYPE_HELLO, ProtocolClient.hello(Wire.PROTO_VERSION, Wire.ROLE_NEW, 0, new byte[32], 1, 0,
                    new byte[32], "static-app"));
            ProtocolClient.Reply r = c.readReply();
            assertEquals(Wire.HELLO_READY, r.status(), r.message());
            assertManifest(c.readFrame());
            String status = d.awaitBody("/status", s -> s.contains("\"program\":\"static-app\""));
            assertTrue(status.contains("\"worker\":\"plain\""), status);
        }
    }

    /** sessions.jsonl is bounded (session.records_max_bytes): past the limit it moves to sessions.jsonl.1. */
    @Test
    void sessionRecordsRotateAtTheirLimit() throws Exception {
        Path records = state.resolve("sessions.jsonl"), older = state.resolve("sessions.jsonl.1");
        try (DaemonHarness d = daemon(TestInventory.gpus(1), Map.of("session.records_max_bytes", "4096"))) {
            for (int i = 0; i < 16; i++) {
                try (ProtocolClient c = d.connect()) {
                    openSession(c, "rotating-app-" + i);
                }
                String program = "\"program\":\"rotating-app-" + i + "\"";
                DaemonHarness.await(() -> text(records).contains(program) || text(older).contains(program));
            }
            assertTrue(Files.exists(older), "16 records of about 500 bytes went past 4096 bytes");
            assertTrue(Files.size(records) <= 4096 && Files.size(older) <= 4096,
                    Files.size(records) + " and " + Files.size(older) + " bytes");
            assertTrue(Files.readString(older).contains("\"program\":\"rotating-app-"), Files.readString(older));
        }
    }

    /**
     * What ended sessions leave (their directories, with their logs) stays within session.kept_bytes, the oldest going
     * first: at the daemon's start for what an earlier run left, and at each session's end. Before, every session's
     * log stayed for good and a tenant's many short sessions could fill the state disk.
     */
    @Test
    void endedSessionsDirectoriesStayWithinTheirBudget() throws Exception {
        Path sessions = state.resolve("sessions");
        Path oldest = oldLog(sessions.resolve("11"), 600, 1_000_000L), older = oldLog(sessions.resolve("12"), 600, 2_000_000L);
        // each directory takes 8 KiB: a block for itself and one for its 600-byte log
        try (DaemonHarness d = daemon(TestInventory.gpus(1), Map.of("session.kept_bytes", "10000"))) {
            assertFalse(Files.exists(oldest), "16 KiB kept against 10000 bytes at the start: the oldest goes");
            assertTrue(Files.exists(older), "the rest fits");
            Path newer = oldLog(sessions.resolve("13"), 600, 3_000_000L);
            try (ProtocolClient c = d.connect()) {
                openSession(c, "trimming-app");
            }
            DaemonHarness.await(() -> text(state.resolve("sessions.jsonl")).contains("\"program\":\"trimming-app\""));
            assertFalse(Files.exists(older), "a session's end trims again: 12 and 13 take 16 KiB");
            assertTrue(Files.exists(newer), "the newer stays");
            try (java.util.stream.Stream<Path> left = Files.list(sessions)) {
                assertTrue(left.anyMatch(p -> !p.equals(newer) && p.getFileName().toString().matches("[0-9]+")),
                        "the session that just ended keeps its directory");
            }
        }
    }

    /** A directory as an ended session leaves it: its log of `bytes`, last changed at `millis`. */
    private static Path oldLog(Path dir, int bytes, long millis) throws java.io.IOException {
        Files.createDirectories(dir);
        Files.write(dir.resolve("worker.log"), new byte[bytes]);
        Files.setLastModifiedTime(dir, java.nio.file.attribute.FileTime.fromMillis(millis));
        return dir;
    }

    private static String text(Path p) throws java.io.IOException {
        return Files.exists(p) ? Files.readString(p) : "";
    }

    @Test
    void clientReachesTheWorkerThroughTheSameConnection() throws Exception {
        try (DaemonHarness d = daemon(TestInventory.gpus(1), Map.of())) {
            long id;
            try (ProtocolClient c = d.connect()) {
                ProtocolClient.Reply ready = openSession(c, "handoff-app");
                id = ready.sessionId();
                assertNotEquals(0, id);
                assertEquals(1, ready.gpuCount());
                assertEquals("", ready.message());

                // wait until the daemon has closed its copy of the socket, then prove the connection lives on
                String status = d.awaitBody("/status", s -> s.contains("\"connections\":1"));
                assertTrue(status.contains("\"id\":" + id), status);
                assertTrue(status.contains("\"program\":\"handoff-app\""), status);
                assertTrue(status.contains("\"sessions\":1"), "GPU 0 counts the session: " + status);
                assertTrue(status.contains("\"worker_start\":"), status);
                assertEcho(c, "ping over the handed-off socket");

                String table = d.body("/status?format=table");
                assertTrue(table.contains("handoff-app") && table.contains("Test GPU"), table);

                // a second connection JOINs the session and is handed to the same worker
                try (ProtocolClient j = d.connect()) {
                    j.sendJoinHello(id, ready.key());
                    ProtocolClient.Reply joined = j.readReply();
                    assertEquals(Wire.HELLO_READY, joined.status(), joined.message());
                    assertEquals(id, joined.sessionId());
                    assertManifest(j.readFrame());
                    d.awaitBody("/status", s -> s.contains("\"connections\":2"));
                    assertEcho(j, "joined");
                }
                try (ProtocolClient bad = d.connect()) {
                    bad.sendJoinHello(id, new byte[32]);
                    assertEquals(Wire.HELLO_REFUSED, bad.readReply().status());
                }
                assertEcho(c, "still here");
            } // closing the NEW connection ends the session

            // a scrape reads each series in turn, in no fixed order: wait for one taken after every count fell
            String metrics = d.awaitBody("/metrics", m -> m.contains("vmcuda_sessions_active 0.0\n")
                    && m.contains("vmcuda_tenant_sessions_active{tenant=\"anonymous\"} 0.0\n")
                    && m.contains("vmcuda_gpu_sessions{gpu=\"0\",uuid=\"GPU-00000000-1111-2222-3333-444444444444\"} 0.0\n"));
            assertTrue(metrics.contains("vmcuda_sessions_total 1.0\n"), metrics);
            assertTrue(metrics.contains("vmcuda_worker_start_seconds_count 1\n"), metrics);
            assertTrue(metrics.contains("vmcuda_gpus 1.0\n"), metrics);
            // labelled series: per GPU, per tenant, and the JVM's own
            assertTrue(metrics.contains("vmcuda_gpu_info{compute_capability=\"9.0\",gpu=\"0\",model=\"Test GPU\",uuid=\"GPU-00000000-1111-2222-3333-444444444444\"} 1\n"), metrics);
            assertTrue(metrics.contains("vmcuda_gpu_memory_total_bytes{gpu=\"0\",uuid=\"GPU-00000000-1111-2222-3333-444444444444\"} 1.7179869184E10\n"), metrics);
            assertTrue(metrics.contains("vmcuda_tenant_sessions_total{tenant=\"anonymous\"} 1.0\n"), metrics);
            assertTrue(metrics.contains("vmcuda_tenant_bytes_total{direction=\"h2d\",tenant=\"anonymous\"} "), metrics);
            assertTrue(metrics.matches("(?s).*\njvm_memory_used_bytes\\{area=\"heap\"} [0-9.E]+\n.*"), metrics);
            for (String line : metrics.split("\n")) {
                // the text exposition format: comments, or NAME{LABELS} VALUE
                assertTrue(line.startsWith("# ") || line.matches("[a-zA-Z_:][a-zA-Z0-9_:]*(\\{.*})? [-+0-9.eEInfNa]+"), line);
            }
            assertTrue(d.body("/status").contains("\"sessions\":0"), "GPU slot freed");

            List<String> records = d.awaitRecords(rs -> !rs.isEmpty()).lines().toList();
            assertEquals(1, records.size());
            String rec = records.get(0);
            assertTrue(rec.contains("\"id\":" + id), rec);
            assertTrue(rec.contains("\"exit_status\":0"), rec);
            assertTrue(rec.contains("\"state\":\"ended\""), rec);
            assertTrue(rec.contains("\"gpus\":[\"GPU-00000000-1111-2222-3333-444444444444\"]"), rec);
            // the fake worker reports the bytes it echoed on all its connections as its STATS
            int echoed = "ping over the handed-off socket".length() + "joined".length() + "still here".length();
            assertTrue(rec.contains("\"bytes_h2d\":" + echoed), rec);

            String log = Files.readString(state.resolve("sessions").resolve(Long.toString(id)).resolve("worker.log"));
            assertTrue(log.contains("argv0=handoff-app "), "argv[0] is the client's program name: " + log);
            assertTrue(log.contains("CUDA_VISIBLE_DEVICES=GPU-00000000-1111-2222-3333-444444444444"), log);
            assertTrue(log.contains("VMCUDA_BLOCK_SIZE=4194304"), log);
        }
    }

    @Test
    void withoutGpusTheWorkerStillRunsAndReadySaysWhy() throws Exception {
        try (DaemonHarness d = daemon(TestInventory.none(), Map.of());
             ProtocolClient c = d.connect()) {
            ProtocolClient.Reply ready = openSession(c, "no-gpu-app");
            assertEquals(0, ready.gpuCount());
            assertEquals("appliance has no usable GPU: " + TestInventory.NO_GPU_REASON, ready.message());
            c.close();
            // the record comes once the session's directory is cleaned up and its log is back on the state disk
            d.awaitRecords(rs -> rs.contains("\"no-gpu-app\""));
            String log = Files.readString(state.resolve("sessions").resolve(Long.toString(ready.sessionId()))
                    .resolve("worker.log"));
            assertTrue(log.contains("CUDA_VISIBLE_DEVICES=(unset)"), log);
        }
    }

    @Test
    void aWorkerThatExitsBeforeConnectingIsReportedWithItsLog() throws Exception {
        try (DaemonHarness d = daemon(TestInventory.gpus(1), Map.of());
             ProtocolClient c = d.connect()) {
            c.sendNewHello(binary, "crash");
            ProtocolClient.Reply r = c.readReply();
            if (r.status() == Wire.HELLO_SEND_BINARY) {
                c.upload(binary, 65536);
                r = c.readReply();
            }
            assertEquals(Wire.HELLO_REFUSED, r.status());
            assertTrue(r.message().startsWith("worker failed to start; see " + state.toAbsolutePath().resolve("sessions")),
                    r.message());
            assertTrue(r.message().endsWith("fake worker: crashing on purpose"), r.message());
            d.awaitBody("/metrics", m -> m.contains("vmcuda_sessions_active 0.0\n"));
            String rec = d.awaitRecords(rs -> !rs.isEmpty());
            assertTrue(rec.contains("\"state\":\"aborted\"") && rec.contains("\"exit_status\":3"), rec);
        }
    }

    @Test
    void aWorkerThatNeverConnectsIsKilledAfterTheStartTimeout() throws Exception {
        try (DaemonHarness d = daemon(TestInventory.gpus(1), Map.of("worker.start_timeout_s", "1"));
             ProtocolClient c = d.connect()) {
            c.sendNewHello(binary, "silent");
            ProtocolClient.Reply r = c.readReply();
            if (r.status() == Wire.HELLO_SEND_BINARY) {
                c.upload(binary, 65536);
                r = c.readReply();
            }
            assertEquals(Wire.HELLO_REFUSED, r.status());
            assertTrue(r.message().startsWith("worker failed to start; see "), r.message());
            assertTrue(r.message().endsWith("fake worker: staying silent on purpose"), r.message());
            d.awaitBody("/metrics", m -> m.contains("vmcuda_sessions_active 0.0\n"));
            String rec = d.awaitRecords(rs -> !rs.isEmpty());
            assertTrue(rec.contains("\"state\":\"aborted\"") && rec.contains("did not connect within 1 s"), rec);
        }
    }

    @Test
    void stoppingTheDaemonEndsRunningSessions() throws Exception {
        DaemonHarness d = daemon(TestInventory.gpus(1), Map.of());
        try (ProtocolClient c = d.connect()) {
            openSession(c, "long-running");
            d.close();
            String rec = Files.readString(state.resolve("sessions.jsonl"));
            assertTrue(rec.contains("\"state\":\"aborted\"") && rec.contains("appliance daemon stopped"), rec);
            // the worker held the client's socket; with the worker gone the client sees the end
            assertTrue(c.peerClosed());
        }
    }

    @Test
    void aQueuedSessionStartsWhenTheGpuFreesAndOneThatWaitsTooLongIsRefused() throws Exception {
        try (DaemonHarness d = daemon(TestInventory.gpus(1),
                Map.of("scheduler.max_sessions_per_gpu", "1", "scheduler.queue_timeout_s", "1"))) {
            try (ProtocolClient first = d.connect()) {
                openSession(first, "first");
                try (ProtocolClient late = d.connect()) {
                    late.sendNewHello(binary, "late"); // binary is cached by now: no upload
                    ProtocolClient.Reply r = late.readReply();
                    assertEquals(Wire.HELLO_REFUSED, r.status());
                    assertEquals("no GPU free within 1 s: 1 GPU(s), each at its limit of 1 sessions", r.message());
                }
            }
            d.awaitBody("/metrics", m -> m.contains("vmcuda_sessions_active 0.0\n"));
        }
        try (DaemonHarness d = new DaemonHarness(state, fixtures.workerLibDir(), TestInventory.gpus(1),
                Map.of("scheduler.max_sessions_per_gpu", "1", "scheduler.queue_timeout_s", "3600"))) {
            ProtocolClient waiting = d.connect();
            try (ProtocolClient first = d.connect()) {
                openSession(first, "first");
                waiting.sendNewHello(binary, "waiting");
                d.awaitBody("/status", s -> s.contains("\"sessions_queued\":1"));
            } // the first session ends: its GPU slot goes to the queued one
            try (waiting) {
                ProtocolClient.Reply r = waiting.readReply();
                assertEquals(Wire.HELLO_READY, r.status(), r.message());
                assertManifest(waiting.readFrame());
            }
        }
    }

    /**
     * The worker runs the tenant's code, which can write ABORT lines on the worker's link as fast as it likes: the
     * daemon logs the first few of the session and counts the rest in its "ended" line, and the record keeps the
     * first reason, cut to a bounded length.
     */
    @Test
    void aWorkerFloodingItsLinkWithReportsGetsAFewLogLines() throws Exception {
        java.util.List<String> lines = new java.util.ArrayList<>();
        java.util.logging.Logger sessionLog = java.util.logging.Logger.getLogger(
                io.vmcuda.appliance.session.SessionManager.class.getName());
        java.util.logging.Handler capture = new java.util.logging.Handler() {
            @Override
            public void publish(java.util.logging.LogRecord r) {
                synchronized (lines) {
                    lines.add(r.getMessage());
                }
            }

            @Override
            public void flush() {}

            @Override
            public void close() {}
        };
        sessionLog.addHandler(capture);
        String records;
        try (DaemonHarness d = daemon(TestInventory.none(), Map.of())) {
            try (ProtocolClient c = d.connect()) {
                openSession(c, "chatty");
            }
            records = d.awaitRecords(r -> r.contains("\"program\":\"chatty\""));
        } finally {
            sessionLog.removeHandler(capture);
        }
        List<String> reports;
        String ended;
        synchronized (lines) {
            reports = lines.stream().filter(l -> l.contains("worker reports: forged reason")).toList();
            ended = lines.stream().filter(l -> l.contains(" aborted: chatty")).findFirst().orElse("");
        }
        assertEquals(5, reports.size(), reports.toString());
        assertTrue(reports.get(0).contains("forged reason 0 ZZZ"), reports.get(0));
        assertTrue(reports.stream().allMatch(l -> l.length() < 320), "each reason is cut: " + reports.get(0).length());
        assertTrue(ended.contains("; 995 more worker reports not logged"), ended);
        // the record's reason is the first report, cut as in the log
        java.util.regex.Matcher m = java.util.regex.Pattern.compile("\"reason\":\"(forged reason 0 Z*\\.\\.\\.)\"")
                .matcher(records);
        assertTrue(m.find(), records);
        assertTrue(m.group(1).length() <= 243, m.group(1));
    }
}
