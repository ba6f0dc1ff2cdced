package io.vmcuda.tests;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;

/**
 * Tenant isolation and fault tolerance with the real daemon (bin/vmcudad), the real shim and real
 * rewritten workers, on the GPU-less CI machine: the worker sandbox, a client SIGKILLed in the middle of a
 * 1 GiB copy, a worker SIGKILLed beside a healthy session, the daemon SIGKILLed under a running session
 * (and restarted on its cache), idle release, the memory quota hook, and 64 clients at once without a
 * leaked worker or descriptor. The programs are tests/isolation/*.cu.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(300)
class IsolationTest {
    private Path root;
    private Path work;
    private Path iso;
    private Path cudaPrograms;
    private Path cudaLib;

    @BeforeAll
    void setUp() throws IOException {
        root = Path.of(System.getProperty("vmcuda.repo.root", "..")).toAbsolutePath().normalize();
        iso = Path.of(System.getProperty("vmcuda.test.isolation", "target/isolation")).toAbsolutePath();
        cudaPrograms = Path.of(System.getProperty("vmcuda.test.programs", "target/cuda")).toAbsolutePath();
        work = Path.of(System.getProperty("vmcuda.test.work", "target/e2e")).toAbsolutePath().resolveSibling("isolation-e2e");
        cudaLib = Path.of(System.getProperty("vmcuda.cuda.home", "/usr/local/cuda"), "lib64");
        assumeTrue(Files.isExecutable(iso.resolve("long_runner")), "no isolation programs (nvcc missing?): skipped");
        Files.createDirectories(work);
    }

    private Map<String, String> env(DaemonProcess d) {
        Map<String, String> env = new HashMap<>();
        String ld = System.getenv("LD_LIBRARY_PATH");
        env.put("LD_LIBRARY_PATH", cudaLib + (ld == null || ld.isEmpty() ? "" : ":" + ld));
        env.put("VMCUDA_APPLIANCE", null);
        env.put("VMCUDA_TOKEN", d == null ? null : d.token);
        return env;
    }

    private List<String> viaVmcuda(DaemonProcess d, Path program, String... args) {
        List<String> cmd = new ArrayList<>(List.of(root.resolve("bin/vmcuda").toString(), "run", "--appliance",
                "127.0.0.1:" + d.port, "--", program.toString()));
        cmd.addAll(List.of(args));
        return cmd;
    }

    private Process start(DaemonProcess d, Path program, Path logPrefix, String... args) throws IOException {
        return start(d, false, program, logPrefix, args);
    }

    /** @param stdinOpen the program's stdin is a pipe the test writes (Process.getOutputStream), else /dev/null */
    private Process start(DaemonProcess d, boolean stdinOpen, Path program, Path logPrefix, String... args) throws IOException {
        ProcessBuilder pb = new ProcessBuilder(viaVmcuda(d, program, args)).directory(work.toFile())
                .redirectInput(stdinOpen ? ProcessBuilder.Redirect.PIPE : ProcessBuilder.Redirect.from(Path.of("/dev/null").toFile()))
                .redirectOutput(Path.of(logPrefix + ".out").toFile())
                .redirectError(Path.of(logPrefix + ".err").toFile());
        env(d).forEach((k, v) -> {
            if (v == null) pb.environment().remove(k);
            else pb.environment().put(k, v);
        });
        return pb.start();
    }

    private static String read(Path p) throws IOException {
        return Files.exists(p) ? Files.readString(p) : "";
    }

    private static List<ProcessHandle> workers(DaemonProcess d) {
        return d.process.descendants().filter(ProcessHandle::isAlive).toList();
    }

    private static String records(DaemonProcess d) throws IOException {
        return read(d.stateDir.resolve("sessions.jsonl"));
    }

    private static String workerLogs(DaemonProcess d) throws IOException {
        StringBuilder b = new StringBuilder();
        try (Stream<Path> s = Files.list(d.stateDir.resolve("sessions"))) {
            for (Path dir : s.sorted().toList()) b.append(read(dir.resolve("worker.log")));
        }
        return b.toString();
    }

    @Test
    void sandboxedWorkerHasNoNetworkNoNamespacesAndAPrivateTmp() throws Exception {
        assumeTrue(DaemonProcess.currentUid() == 0, "the sandbox needs root");
        Path program = iso.resolve("sandbox_probe");
        ProgramRunner.Result nat = ProgramRunner.run(List.of(program.toString()), env(null), work, work.resolve("probe-native"));
        assertTrue(read(work.resolve("probe-native.err")).matches("(?s).*probe: write /tmp/vmcuda-isolation-probe\\.\\d+: written.*"));
        try (DaemonProcess d = DaemonProcess.start(root, work, Map.of("worker.max_file_bytes", "1048576"), null,
                "daemon-sandbox.log")) {
            ProgramRunner.Result vm = ProgramRunner.run(viaVmcuda(d, program), env(d), work, work.resolve("probe-vmcuda"));
            String ctx = "\n" + vm.describe() + "--- daemon ---\n" + d.logText();
            assertEquals(nat.exitCode(), vm.exitCode(), ctx);
            assertEquals(nat.stdout(), vm.stdout(), ctx);
            assertTrue(d.logText().contains("workers sandboxed as nobody"), ctx);
            DaemonProcess.await("session record", 10_000, () -> records(d).contains("sandbox_probe"));
            String log = workerLogs(d);
            // the system-call filter: no INET socket at all, no user namespace, no ptrace
            assertTrue(log.contains("probe: tcp connect 127.0.0.1: Operation not permitted"), log);
            assertTrue(log.contains("probe: tcp connect 1.1.1.1: Operation not permitted"), log);
            assertTrue(log.contains("probe: unshare a user namespace: Operation not permitted"), log);
            assertTrue(log.contains("probe: ptrace(PTRACE_TRACEME): Operation not permitted"), log);
            // the session's cgroup limits are the daemon's to write, not the tenant's
            assertTrue(log.contains("probe: lift the session's memory limit: Read-only file system"), log);
            // out of memory, the kernel takes a session before the daemon
            assertTrue(log.contains("probe: oom_score_adj 500"), log);
            // worker.max_file_bytes: no file past 1 MiB, the worker's log included
            assertTrue(log.contains("probe: write 2 MiB: File too large"), log);
            assertTrue(log.contains("probe: write /var/tmp/vmcuda-isolation-probe: Read-only file system"), log);
            // its own uid from worker.uid_range (default 5000000-5099999), not a shared account
            assertTrue(log.matches("(?s).*probe: uid 50\\d{5}\n.*"), log);
            // the daemon's state is out of sight: records, binary cache, other sessions
            assertTrue(log.contains("probe: read the session records: No such file or directory"), log);
            assertTrue(log.contains("probe: open the binary cache: No such file or directory"), log);
            assertTrue(log.contains("probe: other session directories visible: 0"), log);
            java.util.regex.Matcher m = java.util.regex.Pattern
                    .compile("probe: write (/tmp/vmcuda-isolation-probe\\.\\d+): written").matcher(log);
            assertTrue(m.find(), "the worker could write its private /tmp: " + log);
            Path workerFile = Path.of(m.group(1));
            assertFalse(Files.exists(workerFile), workerFile + ": the worker's /tmp file reached the appliance's /tmp");
            try (Stream<Path> s = Files.list(Path.of("/tmp"))) {
                s.filter(p -> p.getFileName().toString().startsWith("vmcuda-isolation-probe.")).forEach(p -> p.toFile().delete());
            }
        }
    }

    /**
     * A fork bomb in one tenant's session meets only that session's process limit: every worker has a uid
     * of its own, and RLIMIT_NPROC counts per uid. Another session started while the bomb holds its
     * limit (a multi-threaded program: one worker thread per client thread) runs as it runs natively.
     */
    @Test
    void aForkBombStarvesOnlyItsOwnSession() throws Exception {
        assumeTrue(DaemonProcess.currentUid() == 0, "the sandbox needs root");
        Path threads = cudaPrograms.resolve("threads");
        assumeTrue(Files.isExecutable(threads), "no " + threads);
        try (DaemonProcess d = DaemonProcess.start(root, work, Map.of("worker.max_processes", "64"), null,
                "daemon-forkbomb.log")) {
            Process bomb = start(d, iso.resolve("fork_bomb"), work.resolve("bomb"), "15");
            try {
                DaemonProcess.await("the bomb holds its limit", 60_000, () -> workerLogs(d).contains("children running"));
                String bombLog = workerLogs(d);
                assertTrue(bombLog.contains("Resource temporarily unavailable"), bombLog);
                assertFalse(sessionCgroups(d.process.pid()).isEmpty(), "the bomb's session has a cgroup of its own");

                ProgramRunner.Result nat = ProgramRunner.run(List.of(threads.toString()), env(null), work,
                        work.resolve("threads-native"));
                ProgramRunner.Result vm = ProgramRunner.run(viaVmcuda(d, threads), env(d), work,
                        work.resolve("threads-vmcuda"));
                String ctx = "\n" + vm.describe() + "--- worker logs ---\n" + workerLogs(d);
                assertEquals(nat.stdout(), vm.stdout(), ctx);
                assertEquals(nat.exitCode(), vm.exitCode(), ctx);
            } finally {
                bomb.destroyForcibly();
            }
        }
    }

    /**
     * Host memory is held per session by the kernel (worker.memory_max, the session's cgroup): a program that
     * takes anonymous memory, and one that fills /dev/shm, are each stopped at 256 MiB with a message naming the
     * limit, while a session beside them runs as it runs natively and the daemon goes on. Without the limit
     * each bomb would stop by itself at 4 GiB ("nothing stopped it") and its session would start.
     */
    @Test
    void aMemoryBombIsStoppedAtItsSessionsLimitAndNoOtherSessionNotices() throws Exception {
        assumeTrue(DaemonProcess.currentUid() == 0, "session cgroups need root");
        Path threads = cudaPrograms.resolve("threads");
        assumeTrue(Files.isExecutable(threads), "no " + threads);
        try (DaemonProcess d = DaemonProcess.start(root, work, Map.of("worker.memory_max", "256m", "worker.cgroup", "true"),
                null, "daemon-memory-bomb.log")) {
            for (String bomb : List.of("memory_bomb", "memory_bomb_shm")) {
                ProgramRunner.Result vm = ProgramRunner.run(viaVmcuda(d, iso.resolve(bomb), "2"), env(d), work,
                        work.resolve(bomb + "-vmcuda"));
                String ctx = "\n" + vm.describe() + "--- worker logs ---\n" + workerLogs(d) + "--- daemon ---\n" + d.logText();
                assertTrue(vm.stderr().contains("the session's memory limit of 256 MiB (worker.memory_max)"), ctx);
                assertFalse(workerLogs(d).contains("nothing stopped it"), ctx);
                assertFalse(workerLogs(d).matches("(?s).*bomb: (3[2-9][0-9]|[4-9][0-9][0-9]|[0-9]{4}) MiB held.*"), ctx);
            }
            ProgramRunner.Result nat = ProgramRunner.run(List.of(threads.toString()), env(null), work, work.resolve("threads-native"));
            ProgramRunner.Result vm = ProgramRunner.run(viaVmcuda(d, threads), env(d), work, work.resolve("threads-beside-bombs"));
            assertEquals(nat.stdout(), vm.stdout(), "\n" + vm.describe());
            assertEquals(nat.exitCode(), vm.exitCode(), "\n" + vm.describe());
            DaemonProcess.await("both bombs recorded", 10_000, () -> records(d).split("memory limit of 256 MiB", -1).length == 3);
            assertTrue(d.get("/metrics").body().contains("vmcuda_sessions_killed_by_memory_limit_total 2.0\n"));
            // every session's cgroup is gone with it
            long daemonPid = d.process.pid();
            DaemonProcess.await("session cgroups removed", 10_000, () -> sessionCgroups(daemonPid).isEmpty());
        }
    }

    /**
     * A tenant that fills its working directory (the session's directory, the one place besides its bounded /tmp a
     * sandboxed worker can write) stops at worker.disk_max with ENOSPC while its session goes on; after the session
     * nothing of what it wrote is on the state disk (the directory was a tmpfs of its own, now unmounted) and its log
     * is kept where it was.
     */
    @Test
    void aTenantFillingItsDirectoryStopsAtItsSessionDiskAndTheStateDiskNeverSeesIt() throws Exception {
        assumeTrue(DaemonProcess.currentUid() == 0, "session disks need root (mount)");
        try (DaemonProcess d = DaemonProcess.start(root, work, Map.of("worker.disk_max", "64m"), null, "daemon-disk-fill.log")) {
            ProgramRunner.Result vm = ProgramRunner.run(viaVmcuda(d, iso.resolve("disk_fill"), "2"), env(d), work,
                    work.resolve("disk_fill-vmcuda"));
            String ctx = "\n" + vm.describe() + "--- worker logs ---\n" + workerLogs(d) + "--- daemon ---\n" + d.logText();
            assertEquals(0, vm.exitCode(), ctx);
            assertTrue(vm.stdout().contains("done"), "the session did not go on after its disk was full" + ctx);
            Path sessions = d.stateDir.resolve("sessions");
            DaemonProcess.await("the session's directory unmounted", 10_000, () -> d.sessionDiskMounts().isEmpty());
            // the log is put back on the disk just after the unmount
            DaemonProcess.await("the session's log kept", 10_000, () -> workerLogs(d).contains("fill: stopped"));
            String logs = workerLogs(d);
            assertTrue(logs.matches("(?s).*fill: stopped after ([0-9]|[1-5][0-9]|6[0-4]) MiB: No space left on device.*"),
                    "the fill was not stopped at 64 MiB\n" + logs + ctx);
            try (Stream<Path> files = Files.walk(sessions)) {
                assertTrue(files.noneMatch(f -> f.getFileName().toString().startsWith("fill.")), "fill files on the state disk" + ctx);
            }
        }
    }

    /**
     * The tenant owns its session's directory while it runs: one that swaps its worker.log for a link to a file only
     * root may read, or for a named pipe, gets neither the file's bytes into the kept log nor the daemon stuck (taking a
     * pipe's mode opens it and waits for a writer: UidReclaim deletes links and pipes instead); the directory is
     * unmounted and the uid freed either way.
     */
    @Test
    void aTenantSwappingItsLogForALinkOrAPipeGetsNothingAndHoldsNothingUp() throws Exception {
        assumeTrue(DaemonProcess.currentUid() == 0, "session disks need root (mount)");
        assumeTrue(Files.isReadable(Path.of("/etc/shadow")), "no /etc/shadow to aim at");
        String secret = Files.readAllLines(Path.of("/etc/shadow")).get(0);
        try (DaemonProcess d = DaemonProcess.start(root, work, Map.of("worker.disk_max", "64m"), null, "daemon-log-swap.log")) {
            for (String program : List.of("log_swap", "log_swap_fifo")) {
                ProgramRunner.Result vm = ProgramRunner.run(viaVmcuda(d, iso.resolve(program), "1"), env(d), work,
                        work.resolve(program + "-vmcuda"));
                assertEquals(0, vm.exitCode(), "\n" + vm.describe());
            }
            Path sessions = d.stateDir.resolve("sessions");
            DaemonProcess.await("both sessions' directories unmounted", 15_000,
                    () -> d.sessionDiskMounts().isEmpty() && d.logText().split(" ended: log_swap", -1).length == 3);
            String ctx = "\n--- daemon ---\n" + d.logText();
            try (Stream<Path> files = Files.walk(sessions)) {
                for (Path f : files.filter(Files::isRegularFile).toList()) {
                    assertFalse(Files.readString(f).contains(secret), f + " holds /etc/shadow's first line" + ctx);
                }
            }
            // the link and the pipe were taken away with the rest of what the uid owned: its uid is free for the next
            assertFalse(d.logText().contains("stays reserved"), ctx);
        }
    }

    /** What shm_leftover's sessions left in /dev/shm and is still there. */
    private static List<Path> shmLeftovers() throws IOException {
        try (Stream<Path> s = Files.list(Path.of("/dev/shm"))) {
            return s.filter(p -> p.getFileName().toString().startsWith("vmcuda-leftover-")).toList();
        }
    }

    /**
     * A tenant's files in /dev/shm (world-writable, it outlives the session) go when its session ends, a directory
     * nested 200 levels deep included (a walk that gave up at 64 levels left it, with its memory, and kept the uid
     * out of circulation), so that the uid's next session, another tenant's perhaps, finds nothing of it.
     */
    @Test
    void whatASessionLeftInDevShmGoesWithItHoweverDeep() throws Exception {
        assumeTrue(DaemonProcess.currentUid() == 0, "per-session uids need root");
        for (Path p : shmLeftovers()) deleteTree(p);
        try (DaemonProcess d = DaemonProcess.start(root, work, Map.of(), null, "daemon-shm-leftover.log")) {
            ProgramRunner.Result vm = ProgramRunner.run(viaVmcuda(d, iso.resolve("shm_leftover"), "1"), env(d), work,
                    work.resolve("shm_leftover-vmcuda"));
            assertEquals(0, vm.exitCode(), "\n" + vm.describe());
            DaemonProcess.await("the session ended", 15_000, () -> d.logText().contains(" ended: shm_leftover"));
            String ctx = "\n--- worker logs ---\n" + workerLogs(d) + "--- daemon ---\n" + d.logText();
            assertTrue(workerLogs(d).contains("shm_leftover: left a file and a tree 200 deep"), ctx);
            DaemonProcess.await("the uid taken back", 15_000,
                    () -> shmLeftovers().isEmpty() || d.logText().contains("stays reserved"));
            assertEquals(List.of(), shmLeftovers(), ctx);
            assertFalse(d.logText().contains("stays reserved"), ctx);
        }
    }

    /**
     * A daemon killed (SIGKILL) while a session runs cannot take back what its uid left in /dev/shm; the next
     * daemon, which hands out the same uids again from the start of the range, deletes it before its first session.
     */
    @Test
    void whatSessionsOfAKilledDaemonLeftInDevShmGoesAtTheNextStart() throws Exception {
        assumeTrue(DaemonProcess.currentUid() == 0, "per-session uids need root");
        for (Path p : shmLeftovers()) deleteTree(p);
        DaemonProcess first = DaemonProcess.start(root, work, Map.of(), null, "daemon-shm-killed.log");
        Path state = first.stateDir;
        Process client;
        try {
            client = start(first, iso.resolve("shm_leftover"), work.resolve("shm-killed"), "100");
            DaemonProcess.await("session running", 60_000, () -> read(work.resolve("shm-killed.out")).contains("call 2"));
            List<ProcessHandle> ws = workers(first);
            first.process.destroyForcibly();
            DaemonProcess.await("workers exit after their daemon died", 5_000, () -> ws.stream().noneMatch(ProcessHandle::isAlive));
        } finally {
            first.close();
        }
        client.destroyForcibly(); // its calls are answered without a round trip: it would not notice for 100 s
        assertTrue(client.waitFor(60, TimeUnit.SECONDS));
        assertEquals(2, shmLeftovers().size(), "the killed daemon's session should have left a file and a tree: " + shmLeftovers());
        try (DaemonProcess second = DaemonProcess.start(root, work, Map.of(), state, "daemon-shm-restarted.log")) {
            assertEquals(List.of(), shmLeftovers(), "\n--- daemon ---\n" + second.logText());
        }
    }

    private static void deleteTree(Path p) throws IOException {
        try (Stream<Path> s = Files.walk(p)) {
            for (Path f : s.sorted(java.util.Comparator.reverseOrder()).toList()) Files.deleteIfExists(f);
        }
    }

    /** The session cgroups of daemon {@code pid} that exist now (SessionCgroups: .../vmcuda-workers/daemon-PID/session-ID). */
    private static List<Path> sessionCgroups(long pid) throws IOException {
        try (Stream<Path> s = Files.find(Path.of("/sys/fs/cgroup"), 8, (p, a) -> a.isDirectory()
                && p.getFileName() != null && p.getFileName().toString().startsWith("session-")
                && p.getParent().getFileName().toString().equals("daemon-" + pid))) {
            return s.toList();
        }
    }

    /**
     * The tenant's memory quota held from outside its process: the daemon reads each worker's GPU memory from
     * the driver (nvidia-smi --query-compute-apps) and kills a session past its quota plus the slack. CI has no
     * driver: an nvidia-smi on the daemon's PATH stands in for it, describing one GPU and reporting 2 GiB for
     * every process named hold_session (the client and its worker; only the worker is in the session's tree).
     * On the GPU machine tests/isolation/quota_bypass.cu allocates past the quota for real (run-on-device.sh).
     */
    @Test
    void aWorkerPastItsTenantsQuotaInTheDriversCountIsKilled() throws Exception {
        Path hold = Path.of(System.getProperty("vmcuda.test.pool", "target/pool")).toAbsolutePath().resolve("hold_session");
        assumeTrue(Files.isExecutable(hold), "no pool test programs (nvcc missing?): skipped");
        Path smiDir = Files.createDirectories(work.resolve("smi-quota"));
        Path smi = smiDir.resolve("nvidia-smi");
        Files.writeString(smi, "#!/bin/sh\ncase \"$1\" in\n"
                + "  --query-gpu=index,name,uuid,memory.total,compute_cap) echo '0, Test GPU, GPU-00000000-0000-0000-0000-000000000001, 81559, 9.0' ;;\n"
                + "  --query-gpu=index,uuid,memory.used,utilization.gpu) echo '0, GPU-00000000-0000-0000-0000-000000000001, 0, 0' ;;\n"
                + "  --query-compute-apps=pid,used_memory) for p in $(pgrep -f hold_session); do echo \"$p, 2048\"; done ;;\n"
                + "  *) exit 1 ;;\nesac\n");
        smi.toFile().setExecutable(true);
        try (DaemonProcess d = DaemonProcess.start(root, work, Map.of("tenant.e2e.max_memory_bytes", "268435456",
                "worker.quota_check_s", "1", "worker.quota_slack_bytes", "536870912"), null, "daemon-quota.log", null,
                Map.of("PATH", smiDir + ":" + System.getenv("PATH")))) {
            Path prefix = work.resolve("quota-hold");
            Process client = start(d, true, hold, prefix);
            try {
                DaemonProcess.await("the daemon kills the session past its quota", 60_000,
                        () -> d.logText().contains("past the tenant's quota"));
                // 2048 MiB per process of the session's tree named hold_session (the sandbox launcher's argv names it too)
                assertTrue(d.logText().matches("(?s).*its worker used [1-9][0-9]* MiB of GPU memory, past the tenant's quota of 256 MiB.*"),
                        d.logText());
                // the record is written once the worker has exited: only then must the next call find it gone (the
                // log line comes first, and a call in between would still be answered)
                DaemonProcess.await("the session recorded aborted with the reason", 30_000, () ->
                        Files.exists(d.stateDir.resolve("sessions.jsonl"))
                        && Files.readString(d.stateDir.resolve("sessions.jsonl")).contains("past the tenant's quota"));
                client.getOutputStream().write("again\n".getBytes(java.nio.charset.StandardCharsets.UTF_8));
                client.getOutputStream().close();
                assertTrue(client.waitFor(60, TimeUnit.SECONDS));
                String out = read(Path.of(prefix + ".out")), err = read(Path.of(prefix + ".err"));
                assertTrue(out.contains("call: cudaErrorDevicesUnavailable"), out + err);
                assertTrue(err.contains("lost the appliance session"), err);
                assertTrue(d.get("/metrics").body().contains("vmcuda_sessions_killed_over_quota_total 1.0\n"));
            } finally {
                client.destroyForcibly();
            }
        }
    }

    @Test
    void clientKilledInTheMiddleOfAGigabyteCopy() throws Exception {
        try (DaemonProcess d = DaemonProcess.start(root, work, Map.of(), null, "daemon-killclient.log")) {
            Path prefix = work.resolve("bigcopy");
            Process client = start(d, iso.resolve("big_copy"), prefix, "-1", "h2d");
            List<ProcessHandle> ws;
            try {
                // the first 1 GiB copy is through; the second is streaming
                DaemonProcess.await("first 1 GiB H2D", 60_000, () -> read(Path.of(prefix + ".err")).contains("round 0 H2D"));
                Thread.sleep(150);
                ws = workers(d);
                assertFalse(ws.isEmpty(), "no worker running");
            } finally {
                client.destroyForcibly(); // it copies forever: never leave it behind, whatever failed
            }
            long t0 = System.nanoTime();
            DaemonProcess.await("worker exit", 5_000, () -> ws.stream().noneMatch(ProcessHandle::isAlive));
            long ms = (System.nanoTime() - t0) / 1_000_000;
            System.out.println("worker gone " + ms + " ms after its client was SIGKILLed mid-copy");
            assertTrue(ms <= 1000, "the worker took " + ms + " ms to exit");
            DaemonProcess.await("session record", 5_000, () -> records(d).contains("big_copy"));
            String rec = records(d);
            assertTrue(rec.contains("\"state\":\"aborted\"") && rec.contains("client connection lost"), rec);
        }
    }

    @Test
    void killedWorkerFailsItsClientOnlyTheOtherSessionCompletes() throws Exception {
        try (DaemonProcess d = DaemonProcess.start(root, work, Map.of(), null, "daemon-killworker.log")) {
            Path program = iso.resolve("long_runner");
            Process a = start(d, program, work.resolve("runner-a"), "40", "100");
            Process b = start(d, program, work.resolve("runner-b"), "40", "100");
            DaemonProcess.await("two sessions running", 60_000, () -> read(work.resolve("runner-a.out")).contains("call 2")
                    && read(work.resolve("runner-b.out")).contains("call 2"));
            // the worker itself: the leaf process (under the sandbox launcher when sandboxed)
            List<ProcessHandle> leaves = workers(d).stream().filter(p -> p.children().findAny().isEmpty()).toList();
            assertEquals(2, leaves.size(), "two workers: " + leaves);
            assertTrue(leaves.get(0).destroyForcibly());
            assertTrue(a.waitFor(60, TimeUnit.SECONDS) && b.waitFor(60, TimeUnit.SECONDS));
            String outA = read(work.resolve("runner-a.out")), outB = read(work.resolve("runner-b.out"));
            boolean aLost = outA.contains("cudaErrorDevicesUnavailable"), bLost = outB.contains("cudaErrorDevicesUnavailable");
            assertTrue(aLost ^ bLost, "exactly one client lost its worker:\n" + outA + "\n" + outB);
            String healthy = aLost ? outB : outA, lost = aLost ? outA : outB;
            assertTrue(healthy.contains("call 39: ") && healthy.endsWith("done\n"), healthy);
            assertTrue(lost.endsWith("done\n"), "the failed client still ends normally: " + lost);
            String err = read(work.resolve(aLost ? "runner-a.err" : "runner-b.err"));
            assertTrue(err.contains("vmcuda:"), "the client was told why: " + err);
            DaemonProcess.await("two session records", 10_000, () -> records(d).lines().count() >= 2);
            String rec = records(d);
            assertTrue(rec.contains("worker killed by signal 9") && rec.contains("\"state\":\"ended\""), rec);
        }
    }

    @Test
    void daemonKilledItsWorkersExitAndTheCacheSurvivesARestart() throws Exception {
        Path program = iso.resolve("long_runner");
        DaemonProcess first = DaemonProcess.start(root, work, Map.of(), null, "daemon-killdaemon.log");
        Path state = first.stateDir;
        List<ProcessHandle> ws;
        Process client;
        try {
            client = start(first, program, work.resolve("orphan"), "100", "100");
            DaemonProcess.await("session running", 60_000, () -> read(work.resolve("orphan.out")).contains("call 2"));
            ws = workers(first);
            assertFalse(ws.isEmpty());
            first.process.destroyForcibly(); // SIGKILL: no shutdown hook, no SIGTERM to the workers
            long t0 = System.nanoTime();
            DaemonProcess.await("workers exit after their daemon died", 5_000, () -> ws.stream().noneMatch(ProcessHandle::isAlive));
            System.out.println("workers gone " + (System.nanoTime() - t0) / 1_000_000 + " ms after the daemon was SIGKILLed");
        } finally {
            first.close();
        }
        assertTrue(client.waitFor(60, TimeUnit.SECONDS));
        assertTrue(read(work.resolve("orphan.out")).contains("cudaErrorDevicesUnavailable"));
        try (DaemonProcess second = DaemonProcess.start(root, work, Map.of(), state, "daemon-restarted.log")) {
            ProgramRunner.Result r = ProgramRunner.run(viaVmcuda(second, program, "2", "0"), env(second), work,
                    work.resolve("after-restart"));
            assertEquals(0, r.exitCode(), r.describe());
            DaemonProcess.await("record", 10_000, () -> records(second).contains("\"cache_hit\":true"));
        }
    }

    @Test
    void idleSessionIsReleasedWithAnError() throws Exception {
        try (DaemonProcess d = DaemonProcess.start(root, work, Map.of("session.idle_release_minutes", "0.05"), null,
                "daemon-idle.log")) {
            ProgramRunner.Result r = ProgramRunner.run(viaVmcuda(d, iso.resolve("long_runner"), "2", "50", "6000"),
                    env(d), work, work.resolve("idle"));
            String ctx = "\n" + r.describe();
            assertTrue(r.stdout().contains("after idle: cudaErrorDevicesUnavailable"), ctx);
            // the worker's reason reaches the client, also when its calls went through shared memory (the
            // worker says it on the socket; the client reads there once the call pipe is empty)
            assertTrue(r.stderr().contains("session released after 0.05 minutes without CUDA calls"), ctx);
            DaemonProcess.await("record", 10_000, () -> records(d).contains("long_runner"));
            String rec = records(d);
            assertTrue(rec.contains("\"state\":\"aborted\"")
                    && rec.contains("session released after 0.05 minutes without CUDA calls"), rec + ctx);
            assertTrue(workerLogs(d).contains("releasing the session"), workerLogs(d));
            System.out.println("idle release, client stderr: " + r.stderr().strip());
        }
    }

    @Test
    void memoryQuotaHookRefusesWithoutTouchingTheGpu() throws Exception {
        Path program = iso.resolve("quota_probe");
        ProgramRunner.Result nat = ProgramRunner.run(List.of(program.toString(), "256", "64"), env(null), work,
                work.resolve("quota-native"));
        try (DaemonProcess d = DaemonProcess.start(root, work, Map.of("tenant.e2e.max_memory_bytes", "1048576"), null,
                "daemon-quota.log")) {
            ProgramRunner.Result vm = ProgramRunner.run(viaVmcuda(d, program, "256", "64"), env(d), work,
                    work.resolve("quota-vmcuda"));
            assertEquals(nat.stdout(), vm.stdout(), nat.describe() + vm.describe());
            DaemonProcess.await("record", 10_000, () -> records(d).contains("quota_probe"));
            String log = workerLogs(d);
            assertTrue(log.contains("device memory quota: 1048576 bytes"), log);
            assertTrue(log.contains("quota: refused cudaMalloc of 67108864 bytes"), log);
        }
    }

    private static int fdCount(long pid) throws IOException {
        try (Stream<Path> s = Files.list(Path.of("/proc/" + pid + "/fd"))) {
            return (int) s.count();
        }
    }

    @Test
    void sixtyFourClientsAtOnce() throws Exception {
        Path program = cudaPrograms.resolve("device");
        assumeTrue(Files.isExecutable(program), "tests/cuda/device not built");
        ProgramRunner.Result nat = ProgramRunner.run(List.of(program.toString()), env(null), work, work.resolve("load-native"));
        try (DaemonProcess d = DaemonProcess.start(root, work, Map.of(), null, "daemon-load.log")) {
            ProgramRunner.Result warm = ProgramRunner.run(viaVmcuda(d, program), env(d), work, work.resolve("load-warm"));
            assertEquals(nat.stdout(), warm.stdout(), warm.describe());
            DaemonProcess.await("no worker after warm-up", 10_000, () -> workers(d).isEmpty());
            Thread.sleep(500);
            int fdsBefore = fdCount(d.process.pid());
            ExecutorService pool = Executors.newFixedThreadPool(64);
            List<Future<ProgramRunner.Result>> runs = new ArrayList<>();
            long t0 = System.nanoTime();
            for (int i = 0; i < 64; i++) {
                int n = i;
                runs.add(pool.submit(() -> ProgramRunner.run(viaVmcuda(d, program), env(d), work,
                        work.resolve("load").resolve("run" + n))));
            }
            int ok = 0;
            for (Future<ProgramRunner.Result> f : runs) {
                ProgramRunner.Result r = f.get();
                assertEquals(nat.exitCode(), r.exitCode(), r.describe());
                assertEquals(nat.stdout(), r.stdout(), r.describe());
                ok++;
            }
            pool.shutdown();
            System.out.printf("64 concurrent clients: %d identical to native in %.1f s%n", ok, (System.nanoTime() - t0) / 1e9);
            DaemonProcess.await("every worker reaped", 30_000, () -> workers(d).isEmpty());
            DaemonProcess.await("64 more session records", 30_000, () -> records(d).lines().count() >= 65);
            int[] fdsAfter = {fdCount(d.process.pid())};
            DaemonProcess.await("daemon descriptors back to " + fdsBefore + " (now " + fdsAfter[0] + ")", 15_000, () -> {
                fdsAfter[0] = fdCount(d.process.pid());
                return fdsAfter[0] <= fdsBefore;
            });
            String rec = records(d);
            assertFalse(rec.contains("\"state\":\"aborted\""), rec);
        }
    }
}
