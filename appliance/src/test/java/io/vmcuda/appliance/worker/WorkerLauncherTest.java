package io.vmcuda.appliance.worker;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

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
    void withoutGpusCudaVisibleDevicesIsUnsetNotInherited() {
        Map<String, String> env = launcher.environment(spec(null), Map.of("CUDA_VISIBLE_DEVICES", "0"));
        assertFalse(env.containsKey("CUDA_VISIBLE_DEVICES"));
    }

    @Test
    void argv0IsSetThroughExecA() {
        List<String> cmd = WorkerLauncher.command("my app", Path.of("/cache/x/rewritten"));
        assertEquals(List.of("/bin/bash", "-c", "exec -a \"$0\" \"$1\"", "my app", "/cache/x/rewritten"), cmd);
    }
}
