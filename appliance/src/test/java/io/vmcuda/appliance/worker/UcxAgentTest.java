package io.vmcuda.appliance.worker;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.vmcuda.appliance.ApplianceConfig;
import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.ServerSocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileSystemException;
import java.nio.file.NoSuchFileException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import java.util.logging.Handler;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * When the appliance offers UCX (worker.ucx): never to tenants unless the operator says so, never without the agent.
 * And the real agent's confinement (docs/ucx.md "Security"): its own system-call filter, and the namespaces and
 * read-only view vmcuda-sandbox gives it.
 */
class UcxAgentTest {
    @TempDir
    Path lib;

    private static final String TENANT = "tenant.alice.token_sha256";
    private static final String SHA = "ab".repeat(32);

    /** A stand-in agent whose --probe passes (UCX starts). */
    private Path agent() throws Exception {
        return agent("#!/bin/sh\necho 'vmcuda-ucx-agent: probe ok: UCX test'\n");
    }

    private Path agent(String script) throws Exception {
        Path a = lib.resolve(UcxAgent.AGENT);
        Files.writeString(a, script);
        Files.setPosixFilePermissions(a, PosixFilePermissions.fromString("rwxr-xr-x"));
        return a;
    }

    /** An unsandboxed appliance's launcher, its worker library directory `lib` (where the stand-in agents lie). */
    private WorkerLauncher plain() {
        return new WorkerLauncher(lib.resolve("worker.sock"), lib, List.of(), 4194304, Map.of());
    }

    private static ApplianceConfig config(Map<String, String> keys) {
        return ApplianceConfig.defaultsOnly().with(keys);
    }

    @Test
    void autoOffersUcxOnAnApplianceWithoutTenantsWhenTheAgentIsThere() throws Exception {
        assertNull(UcxAgent.resolve(config(Map.of()), plain()), "no agent: not offered");
        Path a = agent();
        assertEquals(a.toAbsolutePath(), UcxAgent.resolve(config(Map.of()), plain()));
        assertNull(UcxAgent.resolve(config(Map.of("worker.ucx", "false")), plain()));
    }

    @Test
    void withTenantsOnlyTrueOffersIt() throws Exception {
        Path a = agent();
        assertNull(UcxAgent.resolve(config(Map.of(TENANT, SHA)), plain()), "auto with tenants: UCX trusts its peers");
        assertEquals(a.toAbsolutePath(), UcxAgent.resolve(config(Map.of(TENANT, SHA, "worker.ucx", "true")), plain()));
    }

    /** An agent that cannot start (UCX's libraries not installed) is not offered to every session to fail in. */
    @Test
    void anAgentWhoseProbeFailsIsNotOffered() throws Exception {
        agent("#!/bin/sh\necho 'vmcuda-ucx-agent: error while loading shared libraries: libucp.so.0' >&2\nexit 127\n");
        assertNull(UcxAgent.resolve(config(Map.of()), plain()));
        IllegalStateException e = assertThrows(IllegalStateException.class,
                () -> UcxAgent.resolve(config(Map.of("worker.ucx", "true")), plain()));
        assertTrue(e.getMessage().contains("libucp.so.0"), e.getMessage());
    }

    @Test
    void trueWithoutTheAgentStopsTheDaemonAndTyposAreRefused() {
        IllegalStateException e = assertThrows(IllegalStateException.class,
                () -> UcxAgent.resolve(config(Map.of("worker.ucx", "true")), plain()));
        assertTrue(e.getMessage().contains("vmcuda-ucx-agent is missing") || e.getMessage().contains("is missing"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> config(Map.of("worker.ucx", "yes")).workerUcx());
    }

    // ---- the real agent (target/native, built by this module) ----

    private static final Path NATIVE = Path.of("target/native").toAbsolutePath();
    private static final long SESSION_UID = 4000123;

    /**
     * The agent installs its system-call filter itself, before UCX starts, in every mode: --self-test tries what
     * the filter must deny (execve, fork, packet and diagnostic sockets, ptrace, other processes' memory, ...) and
     * what it must let through (threads, TCP/IP and netlink-route sockets, writing its own memory as UCX's CMA
     * check does), and then starts UCX under it. Without the filter the checks come out wrong and Seccomp is 0.
     */
    @Test
    void theAgentFiltersItsOwnSystemCallsAndUcxStillStarts() throws Exception {
        Path agent = NATIVE.resolve(UcxAgent.AGENT);
        assertTrue(Files.isExecutable(agent), agent + " not built");
        String out = run(List.of(agent.toString(), "--self-test"), System.getenv());
        for (String line : List.of("check: execve: denied", "check: execveat: denied", "check: fork: denied",
                "check: fork (system call): denied", "check: socket(AF_PACKET): denied",
                "check: socket(AF_NETLINK, NETLINK_SOCK_DIAG): denied", "check: ptrace(PEEKDATA, parent): denied",
                "check: process_vm_readv(parent): denied", "check: unshare(CLONE_NEWUSER): denied",
                "check: socket(AF_INET): allowed", "check: socket(AF_NETLINK, NETLINK_ROUTE): allowed",
                "check: pthread_create: allowed", "check: process_vm_writev(itself): allowed",
                "NoNewPrivs:\t1", "Seccomp:\t2", "self-test: 0 check(s) wrong", "probe ok: UCX")) {
            assertTrue(out.contains(line), line + "\n" + out);
        }
    }

    /**
     * A sandboxed session's agent, as vmcuda-sandbox starts it (as root, so only where the tests run as root,
     * as in CI): the session's uid, its own filter, mount, PID and IPC namespaces of its own but the host's
     * network; in its mount namespace (reached through /proc/PID/root) every mount read-only but a private /tmp,
     * /dev/shm and /proc, writes elsewhere fail even for root, the daemon's state is covered, and neither the
     * host's /tmp (but for the --keep paths below it, read-only) nor its /dev/shm is in sight; alone in its PID
     * namespace. A launcher stopped with SIGTERM kills and reaps it.
     */
    @Test
    void aSandboxedSessionsAgentIsConfinedToItsOwnNamespacesAndReadOnlyMounts() throws Exception {
        assumeTrue(Sandbox.currentUid() == 0, "vmcuda-sandbox needs root");
        Path state = freshState("agent-confined");
        assumeTrue(lib.startsWith("/tmp"), "the test's temporary directory is not below /tmp");
        Path kept = Files.writeString(lib.resolve("kept"), "a library"); // lib is a --keep path
        Path tmpMarker = Files.createTempFile("vmcuda-agent-test", ".txt");
        Path shmMarker = Files.writeString(Path.of("/dev/shm/vmcuda-agent-test-" + ProcessHandle.current().pid()), "x");
        try (ServerSocketChannel daemon = workerSocket(state)) {
            Process sandbox = startSandbox(state, lib);
            try {
                ProcessHandle agent = agentOf(sandbox, state);
                Path proc = Path.of("/proc", Long.toString(agent.pid()));
                String ctx = "\n--- launcher and agent ---\n" + read(state.resolve("sandbox.err"));

                String status = Files.readString(proc.resolve("status"));
                assertTrue(status.contains("\nSeccomp:\t2\n"), status + ctx);
                assertTrue(status.contains("\nNoNewPrivs:\t1\n"), status);
                String u = Long.toString(SESSION_UID);
                assertTrue(status.contains("\nUid:\t" + u + "\t" + u + "\t" + u + "\t" + u + "\n"), status);
                for (String ns : List.of("mnt", "pid", "ipc")) {
                    assertNotEquals(Files.readSymbolicLink(Path.of("/proc/self/ns", ns)), Files.readSymbolicLink(proc.resolve("ns/" + ns)),
                            ns + " namespace shared with the host");
                }
                assertEquals(Files.readSymbolicLink(Path.of("/proc/self/ns/net")), Files.readSymbolicLink(proc.resolve("ns/net")),
                        "the agent needs the host's network");
                // none of the session's variables (the worker's key for the daemon link above all) reaches the agent
                String environ = new String(Files.readAllBytes(proc.resolve("environ")), java.nio.charset.StandardCharsets.UTF_8);
                assertFalse(environ.contains("VMCUDA_"), environ.replace('\0', '\n'));
                assertTrue(environ.contains("PATH="), "the rest of the environment is the agent's: " + environ.replace('\0', '\n'));

                Path root = proc.resolve("root"); // paths below it resolve in the agent's mount namespace
                assertTrue(Files.exists(state.resolve("marker")));
                assertFalse(Files.exists(inside(root, state.resolve("marker"))), "the daemon's state is in the agent's sight");
                assertFalse(Files.exists(inside(root, tmpMarker)), "the host's /tmp is in the agent's sight");
                assertEquals("a library", Files.readString(inside(root, kept)), "a --keep path below /tmp is not bound back");
                assertFalse(Files.exists(inside(root, shmMarker)), "the host's /dev/shm is in the agent's sight");
                for (Path outside : List.of(NATIVE.resolve("written-by-the-agent"), Path.of("/etc/written-by-the-agent"),
                        Path.of("/dev/written-by-the-agent"), lib.resolve("written-by-the-agent"))) {
                    FileSystemException e = assertThrows(FileSystemException.class,
                            () -> Files.writeString(inside(root, outside), "x"), outside + " writable in the agent's namespace");
                    // below /tmp (a checkout there: the agent's /tmp is private) a path that is not kept is not in sight
                    if (outside.startsWith("/tmp") && !outside.startsWith(lib)) {
                        assertTrue(e instanceof NoSuchFileException, outside + " is in the agent's sight: " + e);
                    } else {
                        assertTrue(String.valueOf(e.getReason()).contains("Read-only file system"), outside + ": " + e.getReason());
                    }
                }
                // its own /dev: a few devices and the RDMA ones, no GPU and nothing else of the host's (/dev/tty is on
                // every host, so a host /dev would fail here)
                List<String> allowed = List.of("null", "zero", "full", "random", "urandom", "infiniband", "knem", "xpmem", "shm");
                try (Stream<Path> devs = Files.list(inside(root, Path.of("/dev")))) {
                    List<String> seen = devs.map(p -> p.getFileName().toString()).sorted().toList();
                    assertTrue(allowed.containsAll(seen), "the agent's /dev holds more than it needs: " + seen + ctx);
                    assertTrue(seen.containsAll(List.of("null", "urandom", "shm")), "the agent's /dev lacks the basics: " + seen);
                }
                for (String mount : writableMounts(Files.readAllLines(proc.resolve("mountinfo")))) {
                    assertTrue(List.of("/tmp", "/dev/shm", "/proc").contains(mount), mount + " is writable in the agent's namespace");
                }
                try (Stream<Path> pids = Files.list(inside(root, Path.of("/proc")))) {
                    assertEquals(List.of("1"), pids.map(p -> p.getFileName().toString()).filter(n -> n.matches("[0-9]+")).toList(),
                            "the agent is not alone in its PID namespace");
                }

                sandbox.destroy(); // SIGTERM: the launcher kills the worker, then the agent, and reaps both
                assertTrue(sandbox.waitFor(20, TimeUnit.SECONDS));
                assertFalse(Files.exists(proc), "the launcher left its agent behind (or unreaped)" + ctx);
            } finally {
                sandbox.destroyForcibly();
                Files.deleteIfExists(shmMarker);
                Files.deleteIfExists(tmpMarker);
            }
        }
    }

    /**
     * With workers sandboxed, the daemon's start-up check of the agent (UcxAgent.probe) is vmcuda-sandbox --probe
     * --ucx-agent with the options a session's command line has (--keep, --hide): it builds the agent's
     * confinement with the code that builds a session's (spawn_ucx_agent) and runs the agent's --self-test in it.
     * Here that passes, says what it checked (the filter's checks, made inside; UCX started; the confinement, as
     * uid 65534 = nobody), and UCX is offered, with that in the log.
     */
    @Test
    void theStartUpCheckRunsTheAgentsSelfTestInTheConfinementASessionGivesIt() throws Exception {
        assumeTrue(Sandbox.currentUid() == 0, "vmcuda-sandbox needs root");
        Path state = freshState("agent-probe");
        WorkerLauncher launcher = sandboxed(NATIVE, state);
        Path agent = NATIVE.resolve(UcxAgent.AGENT);
        List<String> cmd = launcher.ucxAgentProbeCommand(agent, 0, List.of());
        assertEquals(List.of(NATIVE.resolve(Sandbox.LAUNCHER).toString(), "--probe"), cmd.subList(0, 2));
        assertTrue(String.join(" ", cmd).contains("--ucx-agent " + agent + " --keep " + NATIVE + " --hide " + state), cmd.toString());

        String out = run(cmd, launcher.ucxAgentProbeEnvironment(System.getenv()));
        for (String line : List.of("check: execve: denied", "check: fork: denied", "check: unshare(CLONE_NEWUSER): denied",
                "check: socket(AF_INET): allowed", "NoNewPrivs:\t1", "Seccomp:\t2", "vmcuda-ucx-agent: self-test: 0 check(s) wrong",
                "vmcuda-ucx-agent: probe ok: UCX", "vmcuda-sandbox: probe ok: UCX agent " + agent + ": self-test passed as uid 65534 "
                        + "in its confinement (mount, PID and IPC namespaces of its own, read-only mounts, private /tmp, 1 --keep path(s), "
                        + "own /dev and /proc, --hide covered)",
                "vmcuda-sandbox: probe ok: user nobody")) {
            assertTrue(out.contains(line), line + "\n" + out);
        }

        List<String> log = new ArrayList<>();
        assertEquals(agent, logged(log, () -> UcxAgent.resolve(config(Map.of("worker.ucx", "true")), launcher)));
        assertTrue(log.stream().anyMatch(m -> m.startsWith("UCX agent self-test: 0 check(s) wrong; UCX agent probe ok: UCX")
                && m.contains("; worker sandbox probe ok: UCX agent " + agent + ": self-test passed as uid 65534 in its confinement")
                && !m.contains("check: ")), log.toString());

        // with worker.uid_range the check runs as a uid of the range, and in a cgroup made as a session's, as a
        // session's agent does; the cgroup is empty when it has finished (its directories can go)
        SessionCgroups cgroups = SessionCgroupsTest.openHere();
        SessionCgroup cg = cgroups.create(WorkerLauncher.PROBE_CGROUP_ID);
        try {
            String ranged = run(launcher.ucxAgentProbeCommand(agent, 5000123, cg.dirs()),
                    launcher.ucxAgentProbeEnvironment(System.getenv()));
            assertTrue(ranged.contains("self-test passed as uid 5000123 in its confinement"), ranged);
            assertTrue(ranged.contains("--hide covered), in " + cg.dirs().size() + " cgroup(s)"), ranged);
            for (Path d : cg.dirs()) assertTrue(CgroupFiles.pids(d).isEmpty(), d + " empty after the check");
        } finally {
            cg.close();
            cgroups.close();
        }
    }

    /**
     * An agent that runs where the daemon runs it but not in a session's confinement -- here one installed
     * executable by root alone (0700): as root, unconfined, its --probe passes (the check the daemon made before),
     * but a session's agent runs as the session's uid and could not be executed. The start-up check runs it as a
     * session would, so it fails, naming the step, and the policy of worker.ucx applies: not offered under auto
     * (logged with the reason), no start-up under true.
     */
    @Test
    void anAgentThatCannotRunInItsConfinementIsNotOffered() throws Exception {
        assumeTrue(Sandbox.currentUid() == 0, "vmcuda-sandbox needs root");
        Path state = freshState("agent-probe-root-only");
        Path libDir = fresh("agent-probe-root-only-lib");
        Path agent = Files.copy(NATIVE.resolve(UcxAgent.AGENT), libDir.resolve(UcxAgent.AGENT));
        Files.setPosixFilePermissions(agent, PosixFilePermissions.fromString("rwx------"));
        assertNull(UcxAgent.probe(agent, new WorkerLauncher(state.resolve("worker.sock"), libDir, List.of(), 4194304, Map.of())),
                "unconfined, as root, the agent runs");

        WorkerLauncher launcher = sandboxed(libDir, state);
        String why = UcxAgent.probe(agent, launcher);
        assertTrue(why != null && why.startsWith("its self-test in the confinement a sandboxed session gives it ("
                + NATIVE.resolve(Sandbox.LAUNCHER) + " --probe --ucx-agent) failed: "), why);
        assertTrue(why.contains("vmcuda-sandbox: execute " + agent + ": Permission denied"), why);
        assertTrue(why.contains("vmcuda-sandbox: probe: the UCX agent's confinement could not be built, or " + agent
                + " could not be executed in it"), why);

        List<String> log = new ArrayList<>();
        assertNull(logged(log, () -> UcxAgent.resolve(config(Map.of()), launcher)), "auto: not offered");
        assertTrue(log.contains("bulk copies over UCX not offered: " + why + " (worker.ucx = auto)"), log.toString());
        IllegalStateException e = assertThrows(IllegalStateException.class,
                () -> UcxAgent.resolve(config(Map.of("worker.ucx", "true")), launcher));
        assertTrue(e.getMessage().startsWith("worker.ucx = true but UCX cannot be offered: " + why), e.getMessage());
    }

    /**
     * A step of building the agent's confinement that fails -- here covering the daemon's state directory (--hide),
     * which is not there -- fails the check with vmcuda-sandbox's line for that step. The directory is not below
     * /tmp (whose private tmpfs already hides what is there, so nothing is mounted for it), wherever the checkout is.
     */
    @Test
    void aConfinementThatCannotBeBuiltFailsTheCheck() throws Exception {
        assumeTrue(Sandbox.currentUid() == 0, "vmcuda-sandbox needs root");
        Path missing = Path.of("/var/lib", "vmcuda-test-absent-state-" + UUID.randomUUID());
        assertFalse(Files.exists(missing));
        String why = UcxAgent.probe(NATIVE.resolve(UcxAgent.AGENT), sandboxed(NATIVE, missing));
        assertTrue(why != null && why.contains("vmcuda-sandbox: hide " + missing + ": No such file or directory"), why);
        assertTrue(why.contains("the UCX agent's confinement could not be built"), why);
    }

    /** The agent is PID 1 of its namespace, yet still dies with its launcher (parent-death signal) when that is killed. */
    @Test
    void aSandboxedSessionsAgentDiesWithAKilledLauncher() throws Exception {
        assumeTrue(Sandbox.currentUid() == 0, "vmcuda-sandbox needs root");
        Path state = freshState("agent-orphaned");
        try (ServerSocketChannel daemon = workerSocket(state)) {
            Process sandbox = startSandbox(state, lib);
            try {
                ProcessHandle agent = agentOf(sandbox, state);
                Path stat = Path.of("/proc", Long.toString(agent.pid()), "stat");
                sandbox.destroyForcibly();
                assertTrue(sandbox.waitFor(20, TimeUnit.SECONDS));
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
                while (running(stat) && System.nanoTime() < deadline) Thread.sleep(50);
                assertFalse(running(stat), "the agent outlived its killed launcher");
            } finally {
                sandbox.destroyForcibly();
            }
        }
    }

    /** A state directory outside /tmp (the agent's private /tmp would hide it anyway: --hide must do the hiding). */
    private static Path freshState(String name) throws IOException {
        Path state = fresh(name);
        Files.createDirectories(state.resolve("sessions/1"));
        Files.writeString(state.resolve("marker"), "the daemon's");
        return state;
    }

    /** An empty directory target/NAME (mode 0755 under the usual umask: searchable by the session's uid). */
    private static Path fresh(String name) throws IOException {
        Path dir = Path.of("target", name).toAbsolutePath();
        if (Files.exists(dir)) {
            try (Stream<Path> s = Files.walk(dir)) {
                for (Path p : s.sorted(Comparator.reverseOrder()).toList()) Files.delete(p);
            }
        }
        return Files.createDirectories(dir);
    }

    /** A sandboxed appliance's launcher (the real vmcuda-sandbox, worker.user nobody), its state directory `state`. */
    private static WorkerLauncher sandboxed(Path workerLibDir, Path state) {
        Sandbox sandbox = new Sandbox(NATIVE.resolve(Sandbox.LAUNCHER), "nobody", 4096, 1024, "16m");
        return new WorkerLauncher(state.resolve("worker.sock"), workerLibDir, List.of(), 4194304, Map.of(), sandbox, "0",
                List.of(), null, state);
    }

    /** Runs `cmd` with exactly `env`; its output (stdout and stderr), once it has exited 0. */
    private static String run(List<String> cmd, Map<String, String> env) throws Exception {
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true);
        pb.environment().clear();
        pb.environment().putAll(env);
        Process p = pb.start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(60, TimeUnit.SECONDS), out);
        assertEquals(0, p.exitValue(), out);
        return out;
    }

    /** `body`'s result; what UcxAgent logged meanwhile is added to `messages`. */
    private static <T> T logged(List<String> messages, Callable<T> body) throws Exception {
        Logger logger = Logger.getLogger(UcxAgent.class.getName());
        Handler capture = new Handler() {
            @Override
            public void publish(LogRecord r) {
                messages.add(r.getMessage());
            }

            @Override
            public void flush() {}

            @Override
            public void close() {}
        };
        logger.addHandler(capture);
        try {
            return body.call();
        } finally {
            logger.removeHandler(capture);
        }
    }

    /** The daemon's worker socket, which the launcher connects to first (nothing needs to answer). */
    private static ServerSocketChannel workerSocket(Path state) throws IOException {
        ServerSocketChannel s = ServerSocketChannel.open(StandardProtocolFamily.UNIX);
        s.bind(UnixDomainSocketAddress.of(state.resolve("worker.sock")));
        return s;
    }

    /** vmcuda-sandbox with the real agent, in front of a worker that only sleeps. */
    private static Process startSandbox(Path state, Path keep) throws IOException {
        List<String> cmd = new ArrayList<>(List.of(NATIVE.resolve("vmcuda-sandbox").toString(), "--uid", Long.toString(SESSION_UID),
                "--workdir", state.resolve("sessions/1").toString(), "--hide", state.toString(), "--keep", keep.toString(),
                "--tmp-size", "16m", "--ucx-agent", NATIVE.resolve(UcxAgent.AGENT).toString(), "--", "/bin/sleep", "sleep", "120"));
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(state.resolve("sandbox.err").toFile());
        pb.environment().put("VMCUDA_WORKER_SOCKET", state.resolve("worker.sock").toString());
        pb.environment().put("VMCUDA_WORKER_KEY", "the-worker-key-for-the-daemon-link"); // as the daemon passes it
        return pb.start();
    }

    /**
     * The launcher's child once it runs the agent's program, and once that has had the time to install its filter
     * (its first step after the exec; an agent without one fails here, after 10 s).
     */
    private static ProcessHandle agentOf(Process sandbox, Path state) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        ProcessHandle agent = null;
        while (agent == null) {
            assertTrue(System.nanoTime() < deadline, "no UCX agent below the launcher: " + read(state.resolve("sandbox.err")));
            assertTrue(sandbox.isAlive(), "the launcher exited: " + read(state.resolve("sandbox.err")));
            agent = sandbox.children().filter(c -> c.info().command().map(x -> x.endsWith(UcxAgent.AGENT)).orElse(false))
                    .findFirst().orElse(null);
            if (agent == null) Thread.sleep(20);
        }
        Path status = Path.of("/proc", Long.toString(agent.pid()), "status");
        deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (!read(status).contains("\nSeccomp:\t2\n") && System.nanoTime() < deadline) Thread.sleep(20);
        assertTrue(read(status).contains("\nSeccomp:\t2\n"), "the agent has no system-call filter: " + read(status)
                + "\n--- launcher and agent ---\n" + read(state.resolve("sandbox.err")));
        return agent;
    }

    /** `path` as seen through `root` (/proc/PID/root). */
    private static Path inside(Path root, Path path) {
        return root.resolve(path.toString().substring(1));
    }

    /**
     * The mount points of mountinfo's writable mounts, leaving out those that another mount on the same point covers
     * (out of reach; a host may stack mounts on one point).
     */
    private static List<String> writableMounts(List<String> mountinfo) {
        List<String[]> mounts = mountinfo.stream().map(l -> l.split(" ")).filter(f -> f.length > 5).toList();
        List<String> writable = new ArrayList<>();
        for (String[] m : mounts) {
            boolean covered = mounts.stream().anyMatch(o -> o[1].equals(m[0]) && o[4].equals(m[4]));
            if (!covered && List.of(m[5].split(",")).contains("rw")) writable.add(m[4]);
        }
        return writable;
    }

    private static boolean running(Path stat) {
        try {
            String s = Files.readString(stat);
            return !s.substring(s.lastIndexOf(')') + 2).startsWith("Z");
        } catch (IOException e) {
            return false; // gone
        }
    }

    private static String read(Path p) {
        try {
            return Files.exists(p) ? Files.readString(p) : "";
        } catch (IOException e) {
            return e.toString();
        }
    }
}
