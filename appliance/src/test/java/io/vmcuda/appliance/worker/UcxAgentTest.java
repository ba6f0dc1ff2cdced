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
import java.util.concurrent.TimeUnit;
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

    private static ApplianceConfig config(Map<String, String> keys) {
        return ApplianceConfig.defaultsOnly().with(keys);
    }

    @Test
    void autoOffersUcxOnAnApplianceWithoutTenantsWhenTheAgentIsThere() throws Exception {
        assertNull(UcxAgent.resolve(config(Map.of()), lib), "no agent: not offered");
        Path a = agent();
        assertEquals(a.toAbsolutePath(), UcxAgent.resolve(config(Map.of()), lib));
        assertNull(UcxAgent.resolve(config(Map.of("worker.ucx", "false")), lib));
    }

    @Test
    void withTenantsOnlyTrueOffersIt() throws Exception {
        Path a = agent();
        assertNull(UcxAgent.resolve(config(Map.of(TENANT, SHA)), lib), "auto with tenants: UCX trusts its peers");
        assertEquals(a.toAbsolutePath(), UcxAgent.resolve(config(Map.of(TENANT, SHA, "worker.ucx", "true")), lib));
    }

    /** An agent that cannot start (UCX's libraries not installed) is not offered to every session to fail in. */
    @Test
    void anAgentWhoseProbeFailsIsNotOffered() throws Exception {
        agent("#!/bin/sh\necho 'vmcuda-ucx-agent: error while loading shared libraries: libucp.so.0' >&2\nexit 127\n");
        assertNull(UcxAgent.resolve(config(Map.of()), lib));
        IllegalStateException e = assertThrows(IllegalStateException.class,
                () -> UcxAgent.resolve(config(Map.of("worker.ucx", "true")), lib));
        assertTrue(e.getMessage().contains("libucp.so.0"), e.getMessage());
    }

    @Test
    void trueWithoutTheAgentStopsTheDaemonAndTyposAreRefused() {
        IllegalStateException e = assertThrows(IllegalStateException.class,
                () -> UcxAgent.resolve(config(Map.of("worker.ucx", "true")), lib));
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
        Process p = new ProcessBuilder(agent.toString(), "--self-test").redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(60, TimeUnit.SECONDS), out);
        assertEquals(0, p.exitValue(), out);
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
        Path state = Path.of("target", name).toAbsolutePath();
        if (Files.exists(state)) {
            try (Stream<Path> s = Files.walk(state)) {
                for (Path p : s.sorted(Comparator.reverseOrder()).toList()) Files.delete(p);
            }
        }
        Files.createDirectories(state.resolve("sessions/1"));
        Files.writeString(state.resolve("marker"), "the daemon's");
        return state;
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
