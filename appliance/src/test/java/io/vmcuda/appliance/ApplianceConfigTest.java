package io.vmcuda.appliance;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
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

    /**
     * vmcudad.d/*.properties beside vmcudad.properties are read before it, in name order, a later file's key
     * winning: the operator's file has the last word over what the package generated.
     */
    @Test
    void dropInsAreReadBeforeTheFileInNameOrder() throws Exception {
        Path f = dir.resolve("vmcudad.properties");
        Files.writeString(f, "scheduler.policy=pack\nadmin.token_sha256 = " + "ef".repeat(32) + "\n");
        Path d = Files.createDirectories(dir.resolve("vmcudad.d"));
        Files.writeString(d.resolve("50-generated.properties"), "tenant.default.token_sha256 = " + "ab".repeat(32) + "\n"
                + "admin.token_sha256 = " + "cd".repeat(32) + "\n");
        Files.writeString(d.resolve("40-site.properties"), "worker.block_size=1048576\n");
        Files.writeString(d.resolve("90-site.properties"), "worker.block_size=2097152\n");
        Files.writeString(d.resolve("README"), "not a properties file: ignored\n");
        ApplianceConfig c = ApplianceConfig.load(f);
        assertEquals(PlacementPolicy.PACK, c.schedulerConfig().policy());
        assertEquals(2097152, c.workerBlockSize(), "90-site after 40-site");
        assertEquals("ef".repeat(32), java.util.HexFormat.of().formatHex(c.adminTokenSha256()), "the operator's file wins");
        assertEquals(List.of("default"), c.tenants().stream().map(io.vmcuda.appliance.auth.Tenant::name).toList());
        assertEquals(List.of(d.resolve("40-site.properties"), d.resolve("50-generated.properties"), d.resolve("90-site.properties"), f),
                ApplianceConfig.files(f));
        Files.writeString(d.resolve("95-typo.properties"), "worker.blocksize=1\n");
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> ApplianceConfig.load(f));
        assertTrue(e.getMessage().contains("95-typo.properties"), e.getMessage());
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
    void cudaIpcIsServedByDefaultOnlyWhileFewerThanTwoTenantsShareTheAppliance() {
        ApplianceConfig none = ApplianceConfig.defaultsOnly();
        Map<String, String> one = Map.of("tenant.a.token_sha256", "ab".repeat(32));
        Map<String, String> two = Map.of("tenant.a.token_sha256", "ab".repeat(32), "tenant.b.token_sha256", "cd".repeat(32));
        assertTrue(none.workerCudaIpc());
        assertTrue(none.with(one).workerCudaIpc());
        assertFalse(none.with(two).workerCudaIpc(), "another tenant's code could open an exported buffer");
        Map<String, String> twoForced = new java.util.HashMap<>(two);
        twoForced.put("worker.cuda_ipc", "true");
        assertTrue(none.with(twoForced).workerCudaIpc());
        assertFalse(none.with(Map.of("worker.cuda_ipc", "false")).workerCudaIpc());
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> none.with(Map.of("worker.cuda_ipc", "yes")).workerCudaIpc());
        assertTrue(e.getMessage().contains("worker.cuda_ipc"), e.getMessage());
    }

    @Test
    void eachTenantGetsAnEvenShareOfTheModuleCacheOnceTwoShareTheAppliance() {
        ApplianceConfig none = ApplianceConfig.defaultsOnly();
        long cache = none.cacheModuleBytes();
        Map<String, String> one = Map.of("tenant.a.token_sha256", "ab".repeat(32));
        Map<String, String> three = Map.of("tenant.a.token_sha256", "ab".repeat(32), "tenant.b.token_sha256", "cd".repeat(32),
                "tenant.c.token_sha256", "ef".repeat(32));
        assertEquals(0, none.cacheModuleTenantBytes(), "no tenants: no share");
        assertEquals(0, none.with(one).cacheModuleTenantBytes(), "one tenant: the whole cache is its");
        assertEquals(cache / 3, none.with(three).cacheModuleTenantBytes(), "three tenants: a third each");
        Map<String, String> set = new java.util.HashMap<>(three);
        set.put("cache.module_tenant_bytes", "1048576");
        assertEquals(1 << 20, none.with(set).cacheModuleTenantBytes());
        set.put("cache.module_tenant_bytes", "0");
        assertEquals(0, none.with(set).cacheModuleTenantBytes());
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> none.with(Map.of("cache.module_tenant_bytes", "half")));
        assertTrue(e.getMessage().contains("cache.module_tenant_bytes"), e.getMessage());
    }

    @Test
    void sessionMemoryLimitIsASizeOrAShareOfTheMachine() {
        ApplianceConfig c = ApplianceConfig.defaultsOnly();
        assertEquals("auto", c.workerCgroup());
        assertEquals(100, c.workerCpuWeight());
        long half = c.workerMemoryMaxBytes(); // 50% of MemTotal
        assertEquals(2 * half, c.with(Map.of("worker.memory_max", "100%")).workerMemoryMaxBytes(), (double) (1 << 20));
        assertEquals(64L << 30, c.with(Map.of("worker.memory_max", "64g")).workerMemoryMaxBytes());
        assertEquals(256L << 20, c.with(Map.of("worker.memory_max", "256M")).workerMemoryMaxBytes());
        assertEquals(1L << 40, c.with(Map.of("worker.memory_max", "1t")).workerMemoryMaxBytes());
        assertEquals(100_000_000L, c.with(Map.of("worker.memory_max", "100000000")).workerMemoryMaxBytes());
        for (String bad : List.of("0", "1m", "0%", "101%", "12x", "-5g", "", "999999999999999t", "5 g")) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> c.with(Map.of("worker.memory_max", bad)), bad);
            assertTrue(e.getMessage().contains("worker.memory_max"), e.getMessage());
        }
        assertThrows(IllegalArgumentException.class, () -> c.with(Map.of("worker.cgroup", "yes")));
        assertThrows(IllegalArgumentException.class, () -> c.with(Map.of("worker.cpu_weight", "0")));
        assertThrows(IllegalArgumentException.class, () -> c.with(Map.of("worker.cpu_weight", "10001")));
    }

    @Test
    void shmRegionsAreEmptyByDefault() {
        assertEquals(List.of(), ApplianceConfig.defaultsOnly().shmRegions());
        assertEquals(List.of(), ApplianceConfig.defaultsOnly().with(Map.of("shm.regions", "  ")).shmRegions());
    }

    @Test
    void shmRegionsListExistingAbsolutePathsInOrder() throws Exception {
        Path a = Files.createFile(dir.resolve("bar2"));
        Path b = Files.createFile(dir.resolve("ring"));
        Path f = dir.resolve("regions.properties");
        Files.writeString(f, "shm.regions= " + b + " ,\t" + a + ", \n");
        assertEquals(List.of(b, a), ApplianceConfig.load(f).shmRegions());
        assertEquals(List.of(a), ApplianceConfig.defaultsOnly().with(Map.of("shm.regions", a.toString())).shmRegions());
    }

    @Test
    void shmRegionsRejectRelativePaths() throws Exception {
        Path a = Files.createFile(dir.resolve("bar2"));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> ApplianceConfig.defaultsOnly().with(Map.of("shm.regions", a + ",dev/uio0")));
        assertTrue(e.getMessage().contains("shm.regions") && e.getMessage().contains("'dev/uio0'")
                && e.getMessage().contains("absolute"), e.getMessage());
        assertFalse(e.getMessage().contains("\n"), "one line");
    }

    @Test
    void shmRegionsRejectMissingPaths() throws Exception {
        Path missing = dir.resolve("no-such-bar");
        Path f = dir.resolve("missing.properties");
        Files.writeString(f, "shm.regions=" + missing + "\n");
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> ApplianceConfig.load(f));
        assertTrue(e.getMessage().contains("shm.regions") && e.getMessage().contains(missing.toString())
                && e.getMessage().contains("does not exist"), e.getMessage());
        assertFalse(e.getMessage().contains("\n"), "one line");
    }

    @Test
    void shmRegionsAreLimitedToWhatTheSandboxTakes() throws Exception {
        Path a = Files.createFile(dir.resolve("bar2"));
        String nine = String.join(",", java.util.Collections.nCopies(ApplianceConfig.MAX_SHM_REGIONS + 1, a.toString()));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> ApplianceConfig.defaultsOnly().with(Map.of("shm.regions", nine)));
        assertTrue(e.getMessage().contains("shm.regions"), e.getMessage());
        String eight = String.join(",", java.util.Collections.nCopies(ApplianceConfig.MAX_SHM_REGIONS, a.toString()));
        assertEquals(ApplianceConfig.MAX_SHM_REGIONS, ApplianceConfig.defaultsOnly().with(Map.of("shm.regions", eight))
                .shmRegions().size());
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
