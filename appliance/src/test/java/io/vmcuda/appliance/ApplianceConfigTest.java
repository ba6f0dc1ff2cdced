package io.vmcuda.appliance;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.vmcuda.scheduler.PlacementPolicy;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ApplianceConfigTest {
    @TempDir
    Path dir;

    @Test
    void embeddedDefaults() {
        ApplianceConfig c = ApplianceConfig.defaultsOnly();
        assertEquals(PlacementPolicy.LEAST_LOADED, c.schedulerConfig().policy());
        assertEquals(16, c.schedulerConfig().maxSessionsPerGpu());
        assertEquals(Duration.ofSeconds(30), c.schedulerConfig().queueTimeout());
        assertEquals(4L << 30, c.binaryMaxBytes());
        assertEquals(4194304, c.workerBlockSize());
        assertEquals(List.of("/usr/local/cuda/lib64", "/usr/local/cuda/lib"), c.workerCudaLibDirs());
        assertEquals(Duration.ofSeconds(20), c.workerStartTimeout());
        assertTrue(c.workerExtraEnv().isEmpty());
    }

    @Test
    void fileOverridesDefaults() throws Exception {
        Path f = dir.resolve("vmcudad.properties");
        Files.writeString(f, "scheduler.policy=pack\nworker.extra_env=A=1 B=two\n");
        ApplianceConfig c = ApplianceConfig.load(f);
        assertEquals(PlacementPolicy.PACK, c.schedulerConfig().policy());
        assertEquals(Map.of("A", "1", "B", "two"), c.workerExtraEnv());
    }

    @Test
    void typosFailAtStartUp() throws Exception {
        Path f = dir.resolve("bad.properties");
        Files.writeString(f, "scheduler.polcy=pack\n");
        assertThrows(IllegalArgumentException.class, () -> ApplianceConfig.load(f));
        assertThrows(IllegalArgumentException.class,
                () -> ApplianceConfig.defaultsOnly().with(Map.of("worker.block_size", "lots")));
        assertThrows(IllegalArgumentException.class,
                () -> ApplianceConfig.defaultsOnly().with(Map.of("scheduler.max_sessions_per_gpu", "0")));
    }

    @Test
    void optionsParse() {
        DaemonOptions o = DaemonOptions.parse(new String[] {"--listen", "0.0.0.0:9000", "--admin=:9001",
                "--state-dir", "/var/lib/vmcuda", "--worker-lib-dir", "/opt/n"});
        assertEquals(9000, o.listen().getPort());
        assertEquals(9001, o.admin().getPort());
        assertEquals(Path.of("/var/lib/vmcuda"), o.stateDir());
        assertEquals(Path.of("/opt/n"), o.workerLibDir());
        assertThrows(IllegalArgumentException.class, () -> DaemonOptions.parse(new String[] {"--listen", "nope"}));
        assertThrows(IllegalArgumentException.class, () -> DaemonOptions.parse(new String[] {"--frobnicate", "1"}));
    }

    @Test
    void workerLibDirIsFoundBesideTheCode() {
        assertEquals(Path.of("/src/appliance/target/native"),
                WorkerLibDir.besideCode(Path.of("/src/appliance/target/classes")));
        assertEquals(Path.of("/src/appliance/target/native"),
                WorkerLibDir.besideCode(Path.of("/src/appliance/target/vmcuda-appliance-0.1.0.jar")));
        assertEquals(Path.of("/opt/vmcuda/native"), WorkerLibDir.besideCode(Path.of("/opt/vmcuda/lib/vmcuda-appliance.jar")));
        assertEquals(Path.of("/x/native").toAbsolutePath(), WorkerLibDir.resolve(null, "/x/native", "/y"));
        assertEquals(Path.of("/c").toAbsolutePath(), WorkerLibDir.resolve(Path.of("/c"), "/x/native", "/y"));
    }

    @Test
    void jsonWriterEscapes() {
        String json = new JsonWriter().beginObject().field("a", "q\"\\\n\u0001").name("b").beginArray().value(1).value(2)
                .endArray().name("c").nullValue().endObject().toString();
        assertEquals("{\"a\":\"q\\\"\\\\\\n\\u0001\",\"b\":[1,2],\"c\":null}", json);
    }
}
