package io.vmcuda.tests;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * Bulk copies over UCX (protocol/PROTOCOL.md "Bulk copies over UCX", docs/ucx.md) end to end with the real
 * daemon, its worker (sandboxed when the tests run as root, as in CI), the worker's UCX agent and the
 * client's UCX transport, over the transports UCX has on a machine without RDMA hardware: tcp, and shared
 * memory. The worker's NVIDIA driver is CI's stand-in (tests/driver/fake), so every copy really moves its
 * bytes to "device" memory and back; drv_bulk compares them. Also: a client killed in the middle of a copy
 * leaves no worker and no agent behind, and a worker killed in the middle of one fails its client with one
 * line naming UCX's status instead of hanging it. No RDMA device was used: these machines have none.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class UcxTransportTest {
    private Path root;
    private Path work;
    private Path driverDir;
    private Path cudaLib;
    private String expected;
    private Map<String, String> workerConfig;

    @BeforeAll
    void locate() throws Exception {
        StandInDriver at = StandInDriver.locate("ucx", "drv_bulk");
        root = at.root();
        work = at.work();
        driverDir = at.driverDir();
        cudaLib = at.cudaLib();
        workerConfig = at.workerConfig();
        // past this point nothing is optional: the appliance module builds the agent, the client core the transport
        assertTrue(Files.isExecutable(root.resolve("appliance/target/native/vmcuda-ucx-agent")), "vmcuda-ucx-agent not built");
        expected = Files.readString(root.resolve("tests/driver/drv_bulk.expected"));
    }

    /** A daemon whose workers use the stand-in driver and whose agents use UCX_TLS=tls. */
    private DaemonProcess daemon(String tls, String log, Map<String, String> more) throws Exception {
        Map<String, String> config = new HashMap<>(workerConfig);
        config.put("worker.ucx", "true");
        config.putAll(more);
        return DaemonProcess.start(root, work, config, null, log, null, Map.of("UCX_TLS", tls));
    }

    private Map<String, String> clientEnv(DaemonProcess d, String tls) {
        Map<String, String> env = new HashMap<>();
        env.put("LD_LIBRARY_PATH", cudaLib.toString());
        env.put("VMCUDA_TOKEN", d.token);
        env.put("VMCUDA_TRANSPORT", "ucx");
        env.put("UCX_TLS", tls);
        return env;
    }

    private List<String> viaVmcuda(DaemonProcess d, String... args) {
        List<String> cmd = new java.util.ArrayList<>(List.of(root.resolve("bin/vmcuda").toString(), "run", "--appliance",
                "127.0.0.1:" + d.port, "--", driverDir.resolve("drv_bulk").toString()));
        cmd.addAll(List.of(args));
        return cmd;
    }

    private void copiesMatch(DaemonProcess d, String tls) throws Exception {
        ProgramRunner.Result r = ProgramRunner.run(viaVmcuda(d), clientEnv(d, tls), driverDir, work.resolve("drv_bulk-" + d.port));
        String ctx = "\n" + r.describe() + "--- worker logs ---\n" + workerLogs(d) + "--- daemon ---\n" + d.logText();
        assertEquals(expected, r.stdout(), ctx);
        assertEquals(0, r.exitCode(), ctx);
        assertFalse(r.stderr().contains("transport ucx not used"), "the client fell back to TCP" + ctx);
        // UCX's own complaints (an end point asking its shared memory for what it cannot do) stay out of the program's output
        assertFalse(r.stderr().contains("UCX  ERROR"), "UCX's errors on the program's stderr" + ctx);
        // the main connection and the helper connections of the striped 48 MiB copy each got a ring of their own
        assertTrue(workerLogs(d).contains("UCX ring attached: 4 slots of"), ctx);
        DaemonProcess.await("the session's UCX agent gone", 10_000, () -> agents(d).isEmpty());
    }

    @Test
    void copiesOverUcxTcpArriveIntact() throws Exception {
        try (DaemonProcess d = daemon("tcp", "daemon-ucx-tcp.log", Map.of())) {
            copiesMatch(d, "tcp");
        }
    }

    /**
     * UCX's shared-memory transports need the client and the agent to be one user (UCX's segments are the
     * creator's alone): that holds for an unsandboxed appliance run by the client's user, which is what this
     * checks. A sandboxed session's agent is out of their reach (next test).
     */
    @Test
    void copiesOverUcxSharedMemoryArriveIntact() throws Exception {
        try (DaemonProcess d = daemon("sm", "daemon-ucx-sm.log", Map.of("worker.sandbox", "false"))) {
            copiesMatch(d, "sm");
        }
    }

    /**
     * A sandboxed session's agent has IPC and PID namespaces of its own, so UCX takes it for a process of another
     * host: none of its shared-memory transports reaches it (they could not anyway: it runs as the session's uid,
     * whose segments the client cannot map, nor it the client's), and the client says so and uses TCP. Before the
     * agent had its own namespaces, UCX tried and the client aborted in UCX (an assertion in ucp_worker_destroy).
     */
    @Test
    void aSandboxedSessionsAgentIsOutOfReachOfSharedMemoryAndTheClientUsesTcp() throws Exception {
        assumeTrue(DaemonProcess.currentUid() == 0, "the sandbox needs root");
        try (DaemonProcess d = daemon("sm", "daemon-ucx-sm-sandboxed.log", Map.of())) {
            ProgramRunner.Result r = ProgramRunner.run(viaVmcuda(d), clientEnv(d, "sm"), driverDir, work.resolve("drv_bulk-sm-sandboxed"));
            String ctx = "\n" + r.describe() + "--- worker logs ---\n" + workerLogs(d);
            assertEquals(expected, r.stdout(), ctx);
            assertEquals(0, r.exitCode(), ctx);
            assertTrue(r.stderr().contains("vmcuda: transport ucx not used: UCX end point: Destination is unreachable; bulk copies go over TCP"), ctx);
        }
    }

    @Test
    void aClientThatCannotReachTheApplianceOverUcxSaysSoAndUsesTcp() throws Exception {
        // a transport the agent has and the client lacks: UCX finds no common one
        try (DaemonProcess d = daemon("tcp", "daemon-ucx-mismatch.log", Map.of())) {
            ProgramRunner.Result r = ProgramRunner.run(viaVmcuda(d), clientEnv(d, "self"), driverDir,
                    work.resolve("drv_bulk-mismatch"));
            String ctx = "\n" + r.describe() + "--- worker logs ---\n" + workerLogs(d);
            assertEquals(expected, r.stdout(), ctx);
            assertEquals(1, r.stderr().lines().filter(l -> l.contains("vmcuda: transport ucx not used: ")).count(), ctx);
            assertTrue(r.stderr().contains("bulk copies go over TCP"), ctx);
        }
    }

    @Test
    void anApplianceWithoutUcxIsNamedAndTheCopiesGoOverTcp() throws Exception {
        try (DaemonProcess d = daemon("tcp", "daemon-ucx-off.log", Map.of("worker.ucx", "false"))) {
            ProgramRunner.Result r = ProgramRunner.run(viaVmcuda(d), clientEnv(d, "tcp"), driverDir, work.resolve("drv_bulk-off"));
            String ctx = "\n" + r.describe();
            assertEquals(expected, r.stdout(), ctx);
            assertTrue(r.stderr().contains("transport ucx not used: the appliance says: this appliance offers no UCX"), ctx);
        }
    }

    /**
     * UCX reads a peer's worker address and packed rkey trusting them: UCX 1.13 aborts the process that reads an
     * address of a format it does not know. An agent whose answers reach the client damaged
     * (tests/driver/damaging_ucx_agent.c, standing in for a faulty agent, a different UCX on the appliance or a
     * link without TLS) costs the client the UCX transport, not its life: UCX reads them in vmcuda-ucx-check first
     * (client-shim/src/core/ucx_blob_check.c), the client says why and copies over TCP. Before, drv_bulk aborted.
     */
    @Test
    void aDamagedUcxAddressCostsTheClientUcxNotItsLife() throws Exception {
        String said = damagedAnswer("address");
        assertTrue(said.contains("vmcuda: transport ucx not used: the appliance's UCX address or rkey killed vmcuda-ucx-check"), said);
    }

    /** The tcp segment sizes UCX must share with the agent are checked too: absurd ones are not applied. */
    @Test
    void absurdUcxSegmentSizesAreNotApplied() throws Exception {
        String said = damagedAnswer("segments");
        assertTrue(said.contains("vmcuda: transport ucx not used: the appliance's UCX tcp segment sizes are not two sizes"), said);
    }

    /** drv_bulk through an appliance whose agent's attach replies are damaged as `how`; its stderr. */
    private String damagedAnswer(String how) throws Exception {
        String env = workerConfig.get("worker.extra_env") + " VMCUDA_UCX_AGENT=" + driverDir.resolve("damaging_ucx_agent")
                + " VMCUDA_TEST_REAL_UCX_AGENT=" + root.resolve("appliance/target/native/vmcuda-ucx-agent") + " VMCUDA_TEST_DAMAGE=" + how;
        // unsandboxed: a sandboxed worker gets its agent from the launcher, never from its environment
        try (DaemonProcess d = daemon("tcp", "daemon-ucx-damaged-" + how + ".log", Map.of("worker.sandbox", "false", "worker.extra_env", env))) {
            ProgramRunner.Result r = ProgramRunner.run(viaVmcuda(d), clientEnv(d, "tcp"), driverDir, work.resolve("drv_bulk-damaged-" + how));
            String ctx = "\n" + r.describe() + "--- worker logs ---\n" + workerLogs(d);
            assertEquals(expected, r.stdout(), ctx);
            assertEquals(0, r.exitCode(), ctx);
            assertEquals(1, r.stderr().lines().filter(l -> l.contains("vmcuda: transport ucx not used: ")).count(), ctx);
            assertTrue(r.stderr().contains("bulk copies go over TCP"), ctx);
            assertTrue(workerLogs(d).contains("UCX ring attached"), "the damaging agent was not in the path" + ctx);
            return r.stderr();
        }
    }

    @Test
    void aClientKilledMidTransferLeavesNoWorkerAndNoAgent() throws Exception {
        try (DaemonProcess d = daemon("tcp", "daemon-ucx-killclient.log", Map.of())) {
            Process client = startCopying(d, work.resolve("loop-client"));
            try {
                List<ProcessHandle> running = agents(d);
                assertFalse(running.isEmpty(), "no UCX agent running\n" + workerLogs(d));
                assertConfined(running.get(0));
            } finally {
                client.destroyForcibly();
            }
            DaemonProcess.await("worker and agent gone", 10_000, () -> d.process.descendants().noneMatch(ProcessHandle::isAlive));
            DaemonProcess.await("session record", 10_000, () -> read(d.stateDir.resolve("sessions.jsonl")).contains("drv_bulk"));
            String rec = read(d.stateDir.resolve("sessions.jsonl"));
            assertTrue(rec.contains("\"state\":\"aborted\"") && rec.contains("client connection lost"), rec);
            copiesMatch(d, "tcp"); // and the appliance serves the next session as before
        }
    }

    @Test
    void aWorkerKilledMidTransferFailsItsClientWithUcxsReason() throws Exception {
        try (DaemonProcess d = daemon("tcp", "daemon-ucx-killworker.log", Map.of())) {
            Path prefix = work.resolve("loop-worker");
            Process client = startCopying(d, prefix);
            try {
                List<ProcessHandle> workers = d.process.descendants()
                        .filter(p -> p.info().command().map(c -> c.endsWith("vmcuda-worker")).orElse(false)).toList();
                assertEquals(1, workers.size(), "one worker: " + workers);
                assertTrue(workers.get(0).destroyForcibly());
                assertTrue(client.waitFor(60, TimeUnit.SECONDS), "the client hangs after its worker died");
                String out = read(Path.of(prefix + ".out")), err = read(Path.of(prefix + ".err"));
                assertTrue(out.contains("CUDA_ERROR_DEVICE_UNAVAILABLE"), out + err);
                assertTrue(err.contains("vmcuda: lost the appliance session"), err);
                DaemonProcess.await("agent gone", 10_000, () -> agents(d).isEmpty());
            } finally {
                client.destroyForcibly();
            }
        }
    }

    /** drv_bulk copying 48 MiB each way in a loop over UCX-tcp, once its first round trip is done. */
    private Process startCopying(DaemonProcess d, Path prefix) throws Exception {
        ProcessBuilder pb = new ProcessBuilder(viaVmcuda(d, "loop")).directory(work.toFile())
                .redirectInput(ProcessBuilder.Redirect.from(Path.of("/dev/null").toFile()))
                .redirectOutput(Path.of(prefix + ".out").toFile()).redirectError(Path.of(prefix + ".err").toFile());
        pb.environment().putAll(clientEnv(d, "tcp"));
        Process p = pb.start();
        try {
            DaemonProcess.await("copies running", 60_000, () -> read(Path.of(prefix + ".out")).contains("copying"));
        } catch (Throwable e) {
            p.destroyForcibly(); // it copies forever: never leave it behind
            throw e;
        }
        return p;
    }

    /**
     * A session's agent in the middle of its copies (appliance UcxAgentTest checks the confinement itself): under its
     * system-call filter with no new privileges; when sandboxed (as root), in mount, PID and IPC namespaces of its
     * own, in the host's network namespace.
     */
    private static void assertConfined(ProcessHandle agent) throws IOException {
        Path proc = Path.of("/proc", Long.toString(agent.pid()));
        String status = read(proc.resolve("status"));
        assertTrue(status.contains("\nSeccomp:\t2\n") && status.contains("\nNoNewPrivs:\t1\n"), status);
        if (DaemonProcess.currentUid() != 0) return; // unsandboxed
        for (String ns : List.of("mnt", "pid", "ipc")) {
            assertNotEquals(Files.readSymbolicLink(Path.of("/proc/self/ns", ns)), Files.readSymbolicLink(proc.resolve("ns/" + ns)), ns);
        }
        assertEquals(Files.readSymbolicLink(Path.of("/proc/self/ns/net")), Files.readSymbolicLink(proc.resolve("ns/net")));
    }

    private static List<ProcessHandle> agents(DaemonProcess d) {
        return d.process.descendants().filter(ProcessHandle::isAlive)
                .filter(p -> p.info().command().map(c -> c.endsWith("vmcuda-ucx-agent")).orElse(false)).toList();
    }

    private static String read(Path p) throws IOException {
        return Files.exists(p) ? Files.readString(p) : "";
    }

    private static String workerLogs(DaemonProcess d) throws IOException {
        StringBuilder b = new StringBuilder();
        Path sessions = d.stateDir.resolve("sessions");
        if (!Files.isDirectory(sessions)) return "";
        try (Stream<Path> s = Files.list(sessions)) {
            for (Path dir : s.sorted().toList()) b.append(read(dir.resolve("worker.log")));
        }
        return b.toString();
    }
}
