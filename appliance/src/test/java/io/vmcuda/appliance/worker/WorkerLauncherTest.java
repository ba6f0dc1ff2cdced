package io.vmcuda.appliance.worker;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class WorkerLauncherTest {
    private final WorkerLauncher launcher = new WorkerLauncher(Path.of("/state/run/worker.sock"), Path.of("/opt/vmcuda/native"),
            List.of("/usr/local/cuda/lib64", "/usr/local/cuda/lib"), 4194304, Map.of("CUDA_CACHE_MAXSIZE", "1000"));

    private static WorkerLauncher.WorkerSpec spec(String cvd) {
        return new WorkerLauncher.WorkerSpec(42, "ab".repeat(32), cvd, "app", Path.of("/bin/true"), Path.of("/w"),
                Path.of("/w/worker.log"));
    }

    @Test
    void environmentFollowsTheProtocol() {
        Map<String, String> env = launcher.environment(spec("GPU-a,GPU-b"),
                Map.of("PATH", "/usr/bin", "CUDA_VISIBLE_DEVICES", "daemon-own", "SECRET", "x"));
        assertEquals("/state/run/worker.sock", env.get("VMCUDA_WORKER_SOCKET"));
        assertEquals("42", env.get("VMCUDA_SESSION_ID"));
        assertEquals("ab".repeat(32), env.get("VMCUDA_WORKER_KEY"));
        assertEquals("GPU-a,GPU-b", env.get("CUDA_VISIBLE_DEVICES"));
        assertEquals("4194304", env.get("VMCUDA_BLOCK_SIZE"));
        assertEquals("/opt/vmcuda/native:/usr/local/cuda/lib64:/usr/local/cuda/lib", env.get("LD_LIBRARY_PATH"));
        assertEquals("/usr/bin", env.get("PATH"));
        assertEquals("1000", env.get("CUDA_CACHE_MAXSIZE"));
        assertFalse(env.containsKey("SECRET"), "the daemon's environment does not leak into workers");
    }

    @Test
    void theWorkerIsToldWhetherItServesCudaIpc() {
        WorkerLauncher l = new WorkerLauncher(Path.of("/state/run/worker.sock"), Path.of("/opt/vmcuda/native"), List.of(),
                4194304, Map.of());
        assertEquals("0", l.environment(spec(null), Map.of("VMCUDA_CUDA_IPC", "1")).get("VMCUDA_CUDA_IPC"),
                "off until the daemon allows it, whatever its own environment says");
        l.allowCudaIpc(true);
        assertEquals("1", l.environment(spec(null), Map.of()).get("VMCUDA_CUDA_IPC"));
    }

    /** Only workers may ask a worker for a shareable export: it is told which uids they have, when they have their own. */
    @Test
    void sandboxedWorkersOfTheirOwnUidsAreToldTheRange() {
        Sandbox sandbox = new Sandbox(Path.of("/opt/vmcuda/native/vmcuda-sandbox"), "nobody", 4096, 1024, "512m");
        WorkerLauncher ranged = new WorkerLauncher(Path.of("/state/run/worker.sock"), Path.of("/opt/vmcuda/native"),
                List.of(), 4194304, Map.of(), sandbox, "0", List.of(), UidPool.parse("5000000-5099999"), null);
        assertEquals("5000000-5099999", ranged.environment(spec(null), Map.of("VMCUDA_WORKER_UIDS", "0-99")).get("VMCUDA_WORKER_UIDS"));
        assertFalse(launcher.environment(spec(null), Map.of("VMCUDA_WORKER_UIDS", "0-99")).containsKey("VMCUDA_WORKER_UIDS"),
                "workers of one uid: the worker's own uid is the rule, whatever the daemon's environment says");
    }

    @Test
    void withoutGpusCudaVisibleDevicesIsUnsetNotInherited() {
        Map<String, String> env = launcher.environment(spec(null), Map.of("CUDA_VISIBLE_DEVICES", "0"));
        assertFalse(env.containsKey("CUDA_VISIBLE_DEVICES"));
    }

    @Test
    void withoutShmRegionsTheVariableIsUnset() {
        assertFalse(launcher.environment(spec(null), Map.of()).containsKey("VMCUDA_SHM_REGIONS"));
    }

    @Test
    void shmRegionsReachEveryWorkerAsPaths() {
        WorkerLauncher withRegions = new WorkerLauncher(Path.of("/state/run/worker.sock"), Path.of("/opt/vmcuda/native"),
                List.of(), 4194304, Map.of(), null, "0", REGIONS);
        Map<String, String> env = withRegions.environment(spec(null), Map.of());
        assertEquals("/sys/bus/pci/devices/0000:00:05.0/resource2,/dev/shm/vmcuda-ring", env.get("VMCUDA_SHM_REGIONS"));
        assertFalse(env.containsKey("VMCUDA_SHM_REGION_FDS"), "descriptors are the sandbox's to give");
        // unsandboxed: the worker itself, no --region anywhere
        assertEquals(WorkerLauncher.command("app", Path.of("/bin/true"), List.of()), withRegions.command(spec(null)));
    }

    @Test
    void sandboxedWorkersGetOneRegionOptionPerPathBeforeTheProgram() {
        Sandbox sandbox = new Sandbox(Path.of("/opt/vmcuda/native/vmcuda-sandbox"), "nobody", 4096, 1024, "512m");
        WorkerLauncher sandboxed = new WorkerLauncher(Path.of("/state/run/worker.sock"), Path.of("/opt/vmcuda/native"),
                List.of("/no/such/cuda/lib"), 4194304, Map.of(), sandbox, "0", REGIONS);
        assertEquals(List.of("/opt/vmcuda/native/vmcuda-sandbox", "--user", "nobody", "--workdir", "/w", "--nproc", "4096",
                "--nofile", "1024", "--tmp-size", "512m", "--keep", "/opt/vmcuda/native",
                "--region", "/sys/bus/pci/devices/0000:00:05.0/resource2", "--region", "/dev/shm/vmcuda-ring",
                "--", "/bin/true", "app"), sandboxed.command(spec(null)));
        assertEquals("/sys/bus/pci/devices/0000:00:05.0/resource2,/dev/shm/vmcuda-ring",
                sandboxed.environment(spec(null), Map.of()).get("VMCUDA_SHM_REGIONS"));

        WorkerLauncher none = new WorkerLauncher(Path.of("/state/run/worker.sock"), Path.of("/opt/vmcuda/native"),
                List.of(), 4194304, Map.of(), sandbox, "0");
        assertFalse(none.command(spec(null)).contains("--region"));
    }

    /**
     * A tenant's own region (tenant.NAME.shm_regions, the BAR of its client VM) reaches only that tenant's
     * workers: another tenant's worker gets neither the descriptor (--region) nor the path. Each worker also
     * runs as its session's uid and cannot see the daemon's state directory (--uid, --hide).
     */
    @Test
    void aTenantsRegionReachesOnlyThatTenantsWorkers() {
        Sandbox sandbox = new Sandbox(Path.of("/opt/vmcuda/native/vmcuda-sandbox"), "nobody", 4096, 1024, "512m");
        WorkerLauncher sandboxed = new WorkerLauncher(Path.of("/state/run/worker.sock"), Path.of("/opt/vmcuda/native"),
                List.of(), 4194304, Map.of(), sandbox, "0", List.of(), new UidPool(5000000, 5000009), Path.of("/state"));
        Path aliceBar = Path.of("/sys/bus/pci/devices/0000:00:05.0/resource2");
        WorkerLauncher.WorkerSpec alice = new WorkerLauncher.WorkerSpec(1, "ab".repeat(32), null, "app",
                Path.of("/bin/true"), Path.of("/state/sessions/1"), Path.of("/state/sessions/1/worker.log"), 0,
                sandboxed.allocateUid(), List.of(aliceBar), null, null, Map.of());
        WorkerLauncher.WorkerSpec bob = new WorkerLauncher.WorkerSpec(2, "cd".repeat(32), null, "app",
                Path.of("/bin/true"), Path.of("/state/sessions/2"), Path.of("/state/sessions/2/worker.log"), 0,
                sandboxed.allocateUid(), List.of(), null, null, Map.of());
        List<String> a = sandboxed.command(alice), b = sandboxed.command(bob);
        assertTrue(a.containsAll(List.of("--region", aliceBar.toString())), a.toString());
        assertFalse(b.contains("--region") || b.contains(aliceBar.toString()), b.toString());
        assertEquals(aliceBar.toString(), sandboxed.environment(alice, Map.of()).get("VMCUDA_SHM_REGIONS"));
        assertFalse(sandboxed.environment(bob, Map.of()).containsKey("VMCUDA_SHM_REGIONS"));
        assertEquals("5000000", a.get(a.indexOf("--uid") + 1));
        assertEquals("5000001", b.get(b.indexOf("--uid") + 1));
        assertEquals("/state", b.get(b.indexOf("--hide") + 1));
    }

    /**
     * With UCX offered, an unsandboxed worker is told where the agent is (it starts it itself); a sandboxed one
     * gets it from the launcher (--ucx-agent), which starts it outside the sandbox. UCX's own settings of the
     * daemon reach both, and UCX's log goes to the session log rather than the program's stdout.
     */
    @Test
    void ucxReachesWorkersThroughTheirAgent() {
        Path agent = Path.of("/opt/vmcuda/native/vmcuda-ucx-agent");
        Map<String, String> daemonEnv = Map.of("UCX_TLS", "rc,self", "UCX_NET_DEVICES", "mlx5_0:1", "OTHER", "x");
        assertFalse(launcher.environment(spec(null), daemonEnv).containsKey("UCX_TLS"), "no UCX settings while UCX is off");
        WorkerLauncher plain = new WorkerLauncher(Path.of("/state/run/worker.sock"), Path.of("/opt/vmcuda/native"),
                List.of(), 4194304, Map.of());
        plain.offerUcx(agent);
        Map<String, String> env = plain.environment(spec(null), daemonEnv);
        assertEquals(agent.toString(), env.get("VMCUDA_UCX_AGENT"));
        assertEquals("rc,self", env.get("UCX_TLS"));
        assertEquals("mlx5_0:1", env.get("UCX_NET_DEVICES"));
        assertEquals("stderr", env.get("UCX_LOG_FILE"));
        assertFalse(env.containsKey("OTHER"));

        Sandbox sandbox = new Sandbox(Path.of("/opt/vmcuda/native/vmcuda-sandbox"), "nobody", 4096, 1024, "512m");
        WorkerLauncher sandboxed = new WorkerLauncher(Path.of("/state/run/worker.sock"), Path.of("/opt/vmcuda/native"),
                List.of(), 4194304, Map.of(), sandbox, "0");
        sandboxed.offerUcx(agent);
        List<String> cmd = sandboxed.command(spec(null));
        assertEquals(agent.toString(), cmd.get(cmd.indexOf("--ucx-agent") + 1));
        assertTrue(cmd.indexOf("--ucx-agent") < cmd.indexOf("--"), cmd.toString());
        assertFalse(sandboxed.environment(spec(null), daemonEnv).containsKey("VMCUDA_UCX_AGENT"), "the launcher's to give");
    }

    /**
     * The start-up check of the agent runs it as a session would: sandboxed, through the launcher's probe with the
     * --keep and --hide a session's command line has (and the workers' open-file limit and /tmp size); unsandboxed,
     * the agent's own --probe. Its environment is what reaches a session's agent, nothing else of the daemon's.
     */
    @Test
    void theAgentsStartUpCheckRunsItAsASessionWould() {
        Path agent = Path.of("/opt/vmcuda/native/vmcuda-ucx-agent");
        Sandbox sandbox = new Sandbox(Path.of("/opt/vmcuda/native/vmcuda-sandbox"), "nobody", 4096, 1024, "512m");
        WorkerLauncher sandboxed = new WorkerLauncher(Path.of("/state/run/worker.sock"), Path.of("/opt/vmcuda/native"),
                List.of("/no/such/cuda/lib"), 4194304, Map.of("UCX_TLS", "tcp"), sandbox, "0", List.of(), null, Path.of("/state"));
        assertEquals(List.of("/opt/vmcuda/native/vmcuda-sandbox", "--probe", "--user", "nobody", "--tmp-size", "512m", "--nofile",
                "1024", "--ucx-agent", agent.toString(), "--keep", "/opt/vmcuda/native", "--hide", "/state"),
                sandboxed.ucxAgentProbeCommand(agent, 0, List.of()));
        // with worker.uid_range, as a uid of the range (a session's agent runs as its session's), given back after
        WorkerLauncher ranged = new WorkerLauncher(Path.of("/state/run/worker.sock"), Path.of("/opt/vmcuda/native"),
                List.of("/no/such/cuda/lib"), 4194304, Map.of(), sandbox, "0", List.of(), new UidPool(5000000, 5000001),
                Path.of("/state"));
        long uid = ranged.allocateUid();
        assertEquals(5000000, uid);
        List<Path> cgroup = List.of(Path.of("/sys/fs/cgroup/vmcuda-workers/daemon-1/session-0"));
        List<String> probe = ranged.ucxAgentProbeCommand(agent, uid, cgroup);
        assertEquals("5000000", probe.get(probe.indexOf("--uid") + 1), probe.toString());
        assertEquals(cgroup.get(0).toString(), probe.get(probe.indexOf("--cgroup") + 1), "in a cgroup made as a session's");
        ranged.releaseProbeUid(uid);
        assertEquals(5000001, ranged.allocateUid(), "round robin: the next one, the check's back in the pool");
        assertEquals(5000000, ranged.allocateUid(), "given back");
        List<String> session = sandboxed.command(spec(null));
        assertEquals(session.get(session.indexOf("--keep") + 1), "/opt/vmcuda/native");
        assertEquals(session.get(session.indexOf("--hide") + 1), "/state");

        Map<String, String> env = sandboxed.ucxAgentProbeEnvironment(Map.of("PATH", "/bin", "UCX_NET_DEVICES", "mlx5_0:1",
                "UCX_TLS", "rc", "OTHER", "x"));
        assertEquals(Map.of("PATH", "/bin", "LD_LIBRARY_PATH", "/opt/vmcuda/native:/no/such/cuda/lib", "UCX_LOG_FILE", "stderr",
                "UCX_NET_DEVICES", "mlx5_0:1", "UCX_TLS", "tcp"), env, "worker.env last, as for a session");

        WorkerLauncher plain = new WorkerLauncher(Path.of("/state/run/worker.sock"), Path.of("/opt/vmcuda/native"),
                List.of(), 4194304, Map.of());
        assertEquals(List.of(agent.toString(), "--probe"), plain.ucxAgentProbeCommand(agent, 0, List.of()));
    }

    private static final List<Path> REGIONS = List.of(Path.of("/sys/bus/pci/devices/0000:00:05.0/resource2"),
            Path.of("/dev/shm/vmcuda-ring"));

    @Test
    void argv0IsSetThroughExecA() {
        List<String> cmd = WorkerLauncher.command("my app", Path.of("/cache/x/rewritten"), List.of());
        assertEquals(List.of("/bin/bash", "-c", "for d in \"${@:2}\"; do echo $$ > \"$d/cgroup.procs\" || exit 125; done; "
                + "exec -a \"$0\" \"$1\"", "my app", "/cache/x/rewritten"), cmd);
    }

    /** An unsandboxed worker is in its session's cgroups before the program runs: the shell writes its own pid, then execs. */
    @Test
    void anUnsandboxedWorkerJoinsItsCgroupsBeforeTheProgramRuns(@org.junit.jupiter.api.io.TempDir Path dir) throws Exception {
        Path a = java.nio.file.Files.createDirectories(dir.resolve("memory/session-1"));
        Path b = java.nio.file.Files.createDirectories(dir.resolve("pids/session-1"));
        for (Path d : List.of(a, b)) java.nio.file.Files.writeString(d.resolve("cgroup.procs"), "");
        Process p = new ProcessBuilder(WorkerLauncher.command("app", Path.of("/bin/true"), List.of(a, b))).start();
        assertEquals(0, p.waitFor());
        assertEquals(p.pid() + "\n", java.nio.file.Files.readString(a.resolve("cgroup.procs")));
        assertEquals(p.pid() + "\n", java.nio.file.Files.readString(b.resolve("cgroup.procs")));
        // a cgroup it cannot join: the program does not run
        Process refused = new ProcessBuilder(WorkerLauncher.command("app", Path.of("/bin/true"), List.of(dir.resolve("none"))))
                .start();
        assertEquals(125, refused.waitFor());
    }

    @Test
    void aSandboxedWorkerGetsItsCgroupsThroughTheLauncher() {
        Sandbox sandbox = new Sandbox(Path.of("/opt/vmcuda/native/vmcuda-sandbox"), "nobody", 4096, 1024, "512m");
        List<String> cmd = sandbox.command(Path.of("/state/sessions/1"), List.of(), List.of(), Path.of("/bin/true"), "app", 0,
                null, null, null, List.of(Path.of("/sys/fs/cgroup/x/vmcuda-workers/session-1")));
        assertEquals("/sys/fs/cgroup/x/vmcuda-workers/session-1", cmd.get(cmd.indexOf("--cgroup") + 1));
        assertTrue(cmd.indexOf("--cgroup") < cmd.indexOf("--"), cmd.toString());
    }
}
