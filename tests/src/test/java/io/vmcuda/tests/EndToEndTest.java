package io.vmcuda.tests;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;
import static org.junit.jupiter.api.Assumptions.assumeTrue;
import static org.junit.jupiter.api.DynamicTest.dynamicTest;

import java.io.IOException;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;
import org.junit.jupiter.api.TestInstance;

/**
 * Runs every CUDA test program twice — natively on the real libcudart, then through
 * {@code bin/vmcuda run} against a real vmcudad — and requires identical stdout and exit code. Each program
 * is built twice (tests/cuda/Makefile): with -cudart shared (the runtime front end; its worker is the
 * rewritten binary) and with nvcc's default static cudart (the driver front end; a plain worker).
 * Without a GPU (CI) both runs stop at the same first CUDA error, which proves the call went through a
 * front end, the daemon and a worker and came back.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class EndToEndTest {

    /** The programs' own exit codes (vmc_check.h): pass, check failed, CUDA error. */
    private static final Set<Integer> PROGRAM_EXIT_CODES = Set.of(0, 1, 2);

    private Path root;
    private Path work;
    private Path cudaLib;
    private List<Path> programs;
    private DaemonProcess daemon;
    private final List<String> runThroughVmcuda = new ArrayList<>();

    @BeforeAll
    void startDaemon() throws Exception {
        root = Path.of(System.getProperty("vmcuda.repo.root", "..")).toAbsolutePath().normalize();
        Path programDir = Path.of(System.getProperty("vmcuda.test.programs", "target/cuda")).toAbsolutePath();
        work = Path.of(System.getProperty("vmcuda.test.work", "target/e2e")).toAbsolutePath();
        cudaLib = Path.of(System.getProperty("vmcuda.cuda.home", "/usr/local/cuda"), "lib64");
        programs = new ArrayList<>(listPrograms(programDir));
        programs.addAll(listPrograms(Path.of(programDir + "-static"))); // the same programs, static cudart
        assumeTrue(!programs.isEmpty(), "no CUDA test programs in " + programDir
                + " (nvcc missing? the build printed the reason): end-to-end test skipped");

        // Past this point nothing is optional: the reactor builds these before this module.
        requireFile(root.resolve("bin/vmcuda"), "the client launcher");
        requireFile(root.resolve("bin/vmcudad"), "the daemon launcher");
        requireFile(root.resolve("client-shim/target/lib/libcudart.so.13"), "the client shim");
        Files.createDirectories(work);
        daemon = DaemonProcess.start(root, work);
    }

    @AfterAll
    void stopDaemon() throws Exception {
        if (daemon != null) daemon.close();
    }

    @TestFactory
    Stream<DynamicTest> nativeAndVmcudaRunsAgree() {
        Stream<DynamicTest> perProgram = programs.stream().map(p -> dynamicTest(label(p), () -> compare(p)));
        // Dynamic tests run in stream order, so this one sees every program's session.
        Stream<DynamicTest> sessions = Stream.of(dynamicTest("daemon recorded one session per program",
                this::checkSessionsRecorded));
        return Stream.concat(perProgram, sessions);
    }

    /**
     * A client pointed at the admin port by mistake (an HTTP server, which waits for a request and says
     * nothing) is told that it is not the client port, after a short deadline for the daemon's challenge
     * rather than the generous one for the rest of the handshake.
     */
    @Test
    void aClientPointedAtTheAdminPortIsToldSo() throws Exception {
        Path program = programs.get(0);
        Map<String, String> env = new HashMap<>();
        env.put("LD_LIBRARY_PATH", joinPath(cudaLib.toString(), System.getenv("LD_LIBRARY_PATH")));
        env.put("VMCUDA_TOKEN", daemon.token);
        ProgramRunner.Result vm = ProgramRunner.run(List.of(root.resolve("bin/vmcuda").toString(), "run",
                "--appliance", "127.0.0.1:" + daemon.adminPort, "--", program.toString()), env,
                program.getParent(), work.resolve("admin-port").resolve(program.getFileName().toString()));
        assertFalse(vm.timedOut(), vm.describe());
        assertTrue(vm.stderr().contains("this is not vmcudad's client port"), vm.describe());
    }

    /** "launch", or "launch (static cudart)" for the build in the -static directory. */
    private static String label(Path program) {
        return program.getFileName() + (program.getParent().getFileName().toString().endsWith("-static") ? " (static cudart)" : "");
    }

    private void compare(Path program) throws Exception {
        String name = program.getFileName().toString();
        String outName = program.getParent().getFileName().toString().endsWith("-static") ? name + ".static" : name;
        Map<String, String> env = new HashMap<>();
        env.put("LD_LIBRARY_PATH", joinPath(cudaLib.toString(), System.getenv("LD_LIBRARY_PATH")));
        env.put("VMCUDA_APPLIANCE", null); // the native run must not see any vmcuda setting
        env.put("VMCUDA_GPUS", null);
        env.put("VMCUDA_TOKEN", daemon.token); // the daemon's tenant token (ignored by the native run)
        env.put("VMCUDA_TRANSPORT", null);

        ProgramRunner.Result nat = ProgramRunner.run(List.of(program.toString()), env,
                program.getParent(), work.resolve("native").resolve(outName));
        assertTrue(PROGRAM_EXIT_CODES.contains(nat.exitCode()),
                name + ": the native run did not reach the program's own checks\n" + nat.describe());
        // Both bulk-data paths: the socket, and the shared-memory ring of a co-located client.
        for (String transport : List.of("tcp", "shm")) {
            env.put("VMCUDA_TRANSPORT", transport);
            ProgramRunner.Result vm = ProgramRunner.run(List.of(root.resolve("bin/vmcuda").toString(), "run",
                    "--appliance", "127.0.0.1:" + daemon.port, "--", program.toString()), env,
                    program.getParent(), work.resolve("vmcuda-" + transport).resolve(outName));
            String both = "\n=== native ===\n" + nat.describe() + "=== vmcuda (" + transport + ") ===\n" + vm.describe();
            assertFalse(nat.timedOut() || vm.timedOut(), name + ": a run timed out" + both);
            assertEquals(nat.exitCode(), vm.exitCode(), name + " over " + transport + ": exit codes differ" + both);
            assertEquals(nat.stdout(), vm.stdout(), name + " over " + transport + ": stdout differs" + both);
        }
        env.remove("VMCUDA_TRANSPORT");
        if (!runThroughVmcuda.contains(name))
            runThroughVmcuda.add(name);
    }

    private void checkSessionsRecorded() throws Exception {
        int expected = runThroughVmcuda.size(); // at least one session per program name (twice for most)
        assumeTrue(expected > 0, "no program ran through vmcuda");
        String context = "\n--- daemon log ---\n" + daemon.logText();

        HttpResponse<String> status = daemon.get("/status");
        assertEquals(200, status.statusCode(), "/status" + context);
        long total = firstNumber(status.body(), "\"sessions_total\"\\s*:\\s*(\\d+)", "/status sessions_total");
        assertTrue(total >= expected, "/status sessions_total " + total + " < " + expected + "\n" + status.body());

        HttpResponse<String> metrics = daemon.get("/metrics");
        assertEquals(200, metrics.statusCode(), "/metrics" + context);
        long metricTotal = firstNumber(metrics.body(),
                "(?m)^vmcuda_sessions_total(?:\\{[^}]*})?\\s+(\\d+)(?:\\.0+)?\\s*$", "/metrics vmcuda_sessions_total");
        assertTrue(metricTotal >= expected, "vmcuda_sessions_total " + metricTotal + " < " + expected);

        // A worker was really forked for each session: its log and its record exist.
        Path records = daemon.stateDir.resolve("sessions.jsonl");
        // a record is written after its session's clean-up, a little after the session counts as ended: wait for
        // every session /status counted (each program name ran one or two), or the calls compared below would miss
        // the last ones' records
        DaemonProcess.await(total + " session records", 10_000, () -> Files.isRegularFile(records)
                && Files.readString(records).lines().filter(l -> !l.isBlank()).count() >= total);
        String jsonl = Files.readString(records);
        long lines = jsonl.lines().filter(l -> !l.isBlank()).count();
        assertTrue(lines >= expected, records + " has " + lines + " records, expected >= " + expected + "\n" + jsonl);
        for (String name : runThroughVmcuda) {
            assertTrue(jsonl.contains("\"" + name + "\""), "no session record names " + name + "\n" + jsonl);
        }
        // every call the sessions made is in the call-time histogram, once (the records' counts come from the
        // same STATS lines)
        long recordedCalls = 0;
        Matcher calls = Pattern.compile("\"calls\":(\\d+)").matcher(jsonl);
        while (calls.find()) recordedCalls += Long.parseLong(calls.group(1));
        long histogramCalls = firstNumber(daemon.get("/metrics").body(),
                "(?m)^vmcuda_call_duration_seconds_count\\{[^}]*tenant=\"e2e\"[^}]*}\\s+(\\d+)(?:\\.0+)?\\s*$",
                "/metrics vmcuda_call_duration_seconds_count");
        assertTrue(recordedCalls > 0, jsonl);
        assertEquals(recordedCalls, histogramCalls, "calls in the records vs in vmcuda_call_duration_seconds");
        long workerLogs;
        try (Stream<Path> dirs = Files.list(daemon.stateDir.resolve("sessions"))) {
            workerLogs = dirs.filter(d -> Files.isRegularFile(d.resolve("worker.log"))).count();
        }
        assertTrue(workerLogs >= expected, "only " + workerLogs + " sessions/<id>/worker.log files, expected >= "
                + expected + context);
    }

    private static long firstNumber(String text, String regex, String what) {
        Matcher m = Pattern.compile(regex).matcher(text);
        if (!m.find()) fail(what + " not found in:\n" + text);
        return Long.parseLong(m.group(1));
    }

    private static List<Path> listPrograms(Path dir) throws IOException {
        if (!Files.isDirectory(dir)) return List.of();
        try (Stream<Path> s = Files.list(dir)) {
            return s.filter(p -> Files.isRegularFile(p) && Files.isExecutable(p)).sorted().toList();
        }
    }

    private static void requireFile(Path p, String what) {
        if (!Files.exists(p)) {
            fail(what + " is missing: " + p + " (build the whole project first: mvn -B install)");
        }
    }

    private static String joinPath(String first, String rest) {
        return rest == null || rest.isEmpty() ? first : first + ":" + rest;
    }
}
