package io.vmcuda.tests;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.Timeout;

/**
 * A pool of three real appliances (bin/vmcudad) on a real etcd, with the real shim placing real programs
 * (tests/pool/hold_session, which keeps its session until its stdin closes). The CI machine has no GPU: each
 * appliance's PATH holds an nvidia-smi that describes two made-up GPUs (pool-a and pool-b: H100 80 GB,
 * pool-c: A100 40 GB), so that the appliances have slots to place on; their workers then answer as on any
 * GPU-less host (cudaErrorInsufficientDriver). Every appliance runs the locality policy, least loaded among
 * equals, with 5 sessions per GPU: 30 slots in all. pool-c offers its shared-memory path to the host
 * "client-host-c".
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
@Timeout(300)
class PoolTest {
    private static final int SLOTS_PER_GPU = 5;
    /**
     * The registrations' lease (cluster.ttl_s' default, 8 s): a dead appliance's registration expires at most
     * this long after its last refresh, and etcd checks expiries every 500 ms; the issue asks for 10 s.
     */
    private static final int TTL_S = 8;
    private static final int GONE_WITHIN_S = 10;
    private static final Pattern SESSION_ON = Pattern.compile("session \\d+ on 127\\.0\\.0\\.1:(\\d+)");

    private Path root;
    private Path work;
    private Path holdShared;
    private Path holdStatic;
    private Path cudaLib;
    private EtcdProcess etcd;
    private final Map<String, DaemonProcess> appliances = new LinkedHashMap<>();
    private final List<Holder> holders = new ArrayList<>();
    private String token;
    private int runs;

    @BeforeAll
    void setUp() throws Exception {
        root = Path.of(System.getProperty("vmcuda.repo.root", "..")).toAbsolutePath().normalize();
        Path programs = Path.of(System.getProperty("vmcuda.test.pool", "target/pool")).toAbsolutePath();
        holdShared = programs.resolve("hold_session");
        holdStatic = programs.resolve("hold_session_static");
        cudaLib = Path.of(System.getProperty("vmcuda.cuda.home", "/usr/local/cuda"), "lib64");
        assumeTrue(Files.isExecutable(holdShared), "no pool test programs (nvcc missing?): skipped");
        Path etcdBinary = EtcdProcess.find();
        assertNotNull(etcdBinary, "etcd is not installed: apt-get install etcd-server (.ci/run installs it)");
        work = Path.of(System.getProperty("vmcuda.test.work", "target/e2e")).toAbsolutePath().resolveSibling("pool-e2e");
        if (Files.isDirectory(work)) {
            try (var old = Files.walk(work)) { // a previous run's logs would mislead
                old.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
            }
        }
        Files.createDirectories(work);
        etcd = EtcdProcess.start(etcdBinary, work);
        byte[] raw = new byte[32];
        new java.security.SecureRandom().nextBytes(raw);
        token = java.util.HexFormat.of().formatHex(raw);
        startAppliance("pool-a", "NVIDIA H100 80GB HBM3", 81559, "elsewhere");
        startAppliance("pool-b", "NVIDIA H100 80GB HBM3", 81559, "elsewhere");
        startAppliance("pool-c", "NVIDIA A100-SXM4-40GB", 40960, "client-host-c");
        await("all three appliances registered", 30_000, () -> clusterJson().split("\"slots_per_gpu\"").length - 1 == 3);
    }

    private void startAppliance(String name, String gpuName, int memoryMiB, String shmHost) throws Exception {
        Path smiDir = Files.createDirectories(work.resolve("smi-" + name));
        String id = String.format("%012x", name.hashCode() & 0xffffffffL);
        String gpus = "0, " + gpuName + ", GPU-" + id.substring(4) + "-0000-0000-0000-" + id + ", " + memoryMiB + ", 9.0\\n"
                + "1, " + gpuName + ", GPU-" + id.substring(4) + "-0000-0000-0001-" + id + ", " + memoryMiB + ", 9.0\\n";
        String usage = "0, GPU-" + id.substring(4) + "-0000-0000-0000-" + id + ", 0, 0\\n"
                + "1, GPU-" + id.substring(4) + "-0000-0000-0001-" + id + ", 0, 0\\n";
        String health = "GPU-" + id.substring(4) + "-0000-0000-0000-" + id + ", 34, 70.50, 1980, 0\\n"
                + "GPU-" + id.substring(4) + "-0000-0000-0001-" + id + ", 35, [N/A], 1980, [N/A]\\n";
        Path smi = smiDir.resolve("nvidia-smi");
        // stands in for the driver's tool on a GPU-less machine: the daemon's inventory falls back to it
        Files.writeString(smi, "#!/bin/sh\ncase \"$1\" in\n"
                + "  --query-gpu=index,name,uuid,memory.total,compute_cap) printf '" + gpus + "' ;;\n"
                + "  --query-gpu=index,uuid,memory.used,utilization.gpu) printf '" + usage + "' ;;\n"
                + "  --query-gpu=uuid,temperature.gpu,power.draw,clocks.sm,ecc.errors.uncorrected.volatile.total) printf '"
                + health + "' ;;\n"
                + "  *) exit 1 ;;\nesac\n");
        smi.toFile().setExecutable(true);
        Map<String, String> config = Map.of("cluster.etcd", etcd.url(), "cluster.name", name,
                "cluster.policy", "locality", "cluster.shm_hosts", shmHost,
                "scheduler.max_sessions_per_gpu", Integer.toString(SLOTS_PER_GPU),
                // also the tenant's cap on placements in flight (aTenantsPlacementsInFlightAreCapped)
                "tenant.e2e.max_sessions", "40");
        // and a stand-in NVML whose first GPU reports XID 79 twice and XID 13 once (the daemon's XID watcher)
        appliances.put(name, DaemonProcess.start(root, work, config, null, name + ".log", token,
                Map.of("PATH", smiDir + ":" + System.getenv("PATH"),
                        "LD_LIBRARY_PATH", root.resolve("appliance/target/native/test/fake-nvml").toString(),
                        "FAKE_NVML_UUIDS", "GPU-" + id.substring(4) + "-0000-0000-0000-" + id + ",GPU-" + id.substring(4)
                                + "-0000-0000-0001-" + id, "FAKE_NVML_XIDS", "79,79,13")));
    }

    @AfterAll
    void tearDown() throws Exception {
        for (Holder h : holders) h.process.destroyForcibly();
        for (DaemonProcess d : appliances.values()) d.close();
        if (etcd != null) etcd.close();
    }

    @Test
    @Order(1)
    void placementSpreadsThirtyProgramsAndNeverOverfillsTheLastSlot() throws Exception {
        // one at a time, the locality policy (no appliance is local to this host) spreads by load
        for (int i = 0; i < 6; i++) hold(Map.of()).awaitFirstCall();
        assertEquals(Map.of("pool-a", 2, "pool-b", 2, "pool-c", 2), activeSessions());
        // 23 more at once race for 23 of the 24 slots left, then 4 at once for the last one: each slot is
        // promised to exactly one client (the placement transaction), so exactly one of the 4 gets it
        List<Holder> burst = new ArrayList<>();
        for (int i = 0; i < 23; i++) burst.add(hold(Map.of()));
        for (Holder h : burst) h.awaitFirstCall();
        List<Holder> lastSlot = new ArrayList<>();
        for (int i = 0; i < 4; i++) lastSlot.add(hold(Map.of()));
        for (Holder h : lastSlot) h.awaitFirstCall();
        long placed = 0;
        for (Holder h : lastSlot) {
            boolean refused = h.stderr().contains("no place in the pool of appliances") && h.stderr().contains("free session slot");
            assertTrue(refused || h.stdout().contains("first call: cudaErrorInsufficientDriver"), h.describe());
            if (!refused) placed++;
        }
        assertEquals(1, placed, "clients that got the last slot");
        assertEquals(Map.of("pool-a", 10, "pool-b", 10, "pool-c", 10), activeSessions());
        System.out.println("PoolTest: placement transactions retried while filling the pool: " + racesLost());
        for (Holder h : holders) {
            if (!lastSlot.contains(h)) assertTrue(h.stdout().contains("first call: cudaErrorInsufficientDriver"), h.describe());
        }
        ProgramRunner.Result full = run(holdShared, Map.of());
        assertTrue(full.stderr().contains("no place in the pool of appliances")
                && full.stderr().contains("free session slot"), full.describe());
        assertTrue(full.stdout().contains("first call: cudaErrorNoDevice"), full.describe());
        releaseAll();
    }

    @Test
    @Order(2)
    void placementHonoursGpuModelMemoryAndLocality() throws Exception {
        assertEquals("pool-c", placedOn(run(holdShared, Map.of("VMCUDA_GPU_MODEL", "a100"))));
        assertEquals("pool-c", placedOn(run(holdShared, Map.of("VMCUDA_HOST_ID", "client-host-c"))));
        // the static-cudart build opens a plain session (driver front end) through the same placement
        assertEquals("pool-c", placedOn(run(holdStatic, Map.of("VMCUDA_HOST_ID", "client-host-c"))));
        String big = placedOn(run(holdShared, Map.of("VMCUDA_GPU_MEMORY", "60G")));
        assertTrue(big.equals("pool-a") || big.equals("pool-b"), big);
        ProgramRunner.Result none = run(holdShared, Map.of("VMCUDA_GPU_MODEL", "V100"));
        assertTrue(none.stderr().contains("of model 'V100'"), none.describe());
        assertTrue(none.stdout().contains("first call: cudaErrorNoDevice"), none.describe());
    }

    @Test
    @Order(3)
    void aDeadApplianceLeavesThePoolWithinItsLeaseAndLaterProgramsRunElsewhere() throws Exception {
        Holder onA = hold(Map.of()); // all empty: least loaded, then by name
        onA.awaitFirstCall();
        assertEquals("pool-a", placedOn(onA.stderr()));
        DaemonProcess a = appliances.remove("pool-a");
        long killed = System.nanoTime();
        a.process.descendants().forEach(ProcessHandle::destroyForcibly); // the appliance VM dies: workers too
        a.process.destroyForcibly().waitFor();
        a.close(); // what the dead daemon left mounted goes (DaemonProcess.unmountSessionDisks)
        onA.send();
        await("the client of the dead appliance reports its loss", 30_000,
                () -> onA.stderr().contains("lost the appliance session"));
        await("pool-a gone from etcd", (TTL_S + 5) * 1000L, () -> !clusterJson().contains("\"pool-a\""));
        long goneMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - killed);
        assertTrue(goneMs <= GONE_WITHIN_S * 1000L, "pool-a left the pool after " + goneMs + " ms");
        System.out.println("PoolTest: pool-a left the pool " + goneMs + " ms after it was killed (lease " + TTL_S + " s)");
        for (int i = 0; i < 10; i++) {
            ProgramRunner.Result r = run(i % 2 == 0 ? holdShared : holdStatic, Map.of());
            assertEquals(0, r.exitCode(), r.describe());
            String where = placedOn(r);
            assertTrue(where.equals("pool-b") || where.equals("pool-c"), where);
        }
    }

    @Test
    @Order(4)
    void appliancesServeThroughAnEtcdRestartAndRegisterAgain() throws Exception {
        Holder kept = hold(Map.of());
        kept.awaitFirstCall();
        etcd.stop();
        ProgramRunner.Result noEtcd = run(holdShared, Map.of());
        assertTrue(noEtcd.stderr().contains("no place in the pool of appliances (etcd " + etcd.url()), noEtcd.describe());
        kept.send(); // its session does not depend on etcd
        await("the held session answers while etcd is down", 30_000,
                () -> kept.stdout().contains("call: cudaErrorInsufficientDriver"));
        etcd.startAgain();
        await("pool-b and pool-c registered again", 30_000,
                () -> clusterJson().contains("\"pool-b\"") && clusterJson().contains("\"pool-c\""));
        ProgramRunner.Result after = run(holdShared, Map.of());
        assertEquals(0, after.exitCode(), after.describe());
        String table = vmcuda("cluster", "--etcd", etcd.url());
        assertTrue(table.contains("pool-b") && table.contains("pool-c") && table.contains("2 x NVIDIA"), table);
        releaseAll();
    }

    /**
     * packaging/grafana/vmcuda-dashboard.json reads only series that a pooled appliance exports: every metric
     * name its queries use is a family in /metrics (summary and histogram parts by their family).
     */
    @Test
    @Order(5)
    void theGrafanaDashboardQueriesOnlySeriesTheAppliancesExport() throws Exception {
        String dashboard = Files.readString(root.resolve("packaging/grafana/vmcuda-dashboard.json"));
        String metrics = appliances.values().iterator().next().get("/metrics").body();
        Matcher names = Pattern.compile("\\b((?:vmcuda|jvm)_[a-z0-9_]+)").matcher(dashboard);
        int checked = 0;
        while (names.find()) {
            String name = names.group(1);
            String family = name.replaceAll("_(sum|count|bucket)$", "");
            assertTrue(metrics.contains("# TYPE " + name + " ") || metrics.contains("# TYPE " + family + " summary")
                            || metrics.contains("# TYPE " + family + " histogram"),
                    "the dashboard queries " + name + ", which /metrics does not have");
            checked++;
        }
        assertTrue(checked >= 20, "only " + checked + " metric names found in the dashboard");
        // the health series carry what NVML said (the stand-in libnvidia-ml.so.1 on the daemon's library path, which
        // nvidia-smi's made-up figures lose to: GPU 0 41 C, 125.5 W, SM 1980 MHz, no ECC error; GPU 1 tells no power,
        // clock or ECC, so those series are absent for it), sampled in the background after a first scrape asked
        // for them
        DaemonProcess d = appliances.values().iterator().next();
        await("GPU health in /metrics", 15_000, () -> d.get("/metrics").body().contains("vmcuda_gpu_power_watts{"));
        String health = d.get("/metrics").body();
        assertTrue(health.matches("(?s).*\\nvmcuda_gpu_temperature_celsius\\{[^}]*gpu=\"0\"[^}]*} 41\\.0\\n.*"), health);
        assertTrue(health.matches("(?s).*\\nvmcuda_gpu_power_watts\\{[^}]*gpu=\"0\"[^}]*} 125\\.5\\n.*"), health);
        assertTrue(health.matches("(?s).*\\nvmcuda_gpu_sm_clock_hertz\\{[^}]*gpu=\"0\"[^}]*} 1\\.98E9\\n.*"), health);
        assertFalse(health.matches("(?s).*\\nvmcuda_gpu_power_watts\\{[^}]*gpu=\"1\".*"), "GPU 1 said not supported\n" + health);
        assertTrue(d.logText().contains("live GPU figures from NVML"), d.logText());
        // XID errors as NVML's events reported them, per GPU and XID
        await("XID errors in /metrics", 15_000, () -> d.get("/metrics").body().contains("vmcuda_gpu_xid_errors_total{"));
        String xids = d.get("/metrics").body();
        assertTrue(xids.matches("(?s).*\\nvmcuda_gpu_xid_errors_total\\{[^}]*gpu=\"0\"[^}]*xid=\"79\"[^}]*} 2\\.0\\n.*"), xids);
        assertTrue(xids.matches("(?s).*\\nvmcuda_gpu_xid_errors_total\\{[^}]*gpu=\"0\"[^}]*xid=\"13\"[^}]*} 1\\.0\\n.*"), xids);
        assertTrue(xids.matches("(?s).*\\nvmcuda_gpu_xid_watched_gpus(\\{[^}]*})? 2\\.0\\n.*"), xids);
        assertTrue(d.logText().contains("reported XID 79: the GPU has fallen off the bus"), d.logText());
    }

    /**
     * A tenant's placements in flight are capped (tenant.NAME.max_sessions, here 40): with 40 tickets of its own
     * outstanding — written straight into etcd, as a client looping PLACE would leave them — the next placement
     * is refused with the reason; a forged ticket id in a NEW HELLO is ignored; once the tickets are gone
     * placement works again.
     */
    @Test
    @Order(6)
    void aTenantsPlacementsInFlightAreCapped() throws Exception {
        for (int i = 1; i <= 40; i++) {
            etcdPut("/vmcuda/tickets/" + (9_000_000 + i),
                    "{\"appliance\":\"pool-b\",\"gpus\":[\"GPU-none\"],\"tenant\":\"e2e\",\"created_ms\":0}");
        }
        ProgramRunner.Result capped = run(holdShared, Map.of());
        assertTrue(capped.stderr().contains("has 40 placements in flight"), capped.describe());
        etcdDeletePrefix("/vmcuda/tickets/");
        ProgramRunner.Result placed = run(holdShared, Map.of());
        assertTrue(placedOn(placed).startsWith("pool-"), placed.describe());
    }

    private void etcdPut(String key, String value) throws Exception {
        etcdPost("/v3/kv/put", "{\"key\":\"" + b64(key) + "\",\"value\":\"" + b64(value) + "\"}");
    }

    private void etcdDeletePrefix(String prefix) throws Exception {
        String end = prefix.substring(0, prefix.length() - 1) + (char) (prefix.charAt(prefix.length() - 1) + 1);
        etcdPost("/v3/kv/deleterange", "{\"key\":\"" + b64(prefix) + "\",\"range_end\":\"" + b64(end) + "\"}");
    }

    private void etcdPost(String path, String body) throws Exception {
        java.net.http.HttpResponse<String> r = java.net.http.HttpClient.newHttpClient().send(
                java.net.http.HttpRequest.newBuilder(java.net.URI.create(etcd.url() + path))
                        .POST(java.net.http.HttpRequest.BodyPublishers.ofString(body)).build(),
                java.net.http.HttpResponse.BodyHandlers.ofString());
        assertEquals(200, r.statusCode(), r.body());
    }

    private static String b64(String s) {
        return java.util.Base64.getEncoder().encodeToString(s.getBytes(StandardCharsets.UTF_8));
    }

    // ---- helpers ----

    private Map<String, String> env(Map<String, String> extra) {
        Map<String, String> env = new HashMap<>();
        String ld = System.getenv("LD_LIBRARY_PATH");
        env.put("LD_LIBRARY_PATH", cudaLib + (ld == null || ld.isEmpty() ? "" : ":" + ld));
        env.put("VMCUDA_APPLIANCE", null);
        env.put("VMCUDA_CONFIG", "/nonexistent");
        env.put("VMCUDA_TOKEN", token);
        env.put("VMCUDA_VERBOSE", "1");
        env.putAll(extra);
        return env;
    }

    private List<String> command(Path program) {
        return List.of(root.resolve("bin/vmcuda").toString(), "run", "--cluster", etcd.url(), "--", program.toString());
    }

    /** Runs the program to its end (stdin closed at once). */
    private ProgramRunner.Result run(Path program, Map<String, String> extra) throws IOException, InterruptedException {
        return ProgramRunner.run(command(program), env(extra), work, work.resolve("run-" + (++runs)));
    }

    private Holder hold(Map<String, String> extra) throws IOException {
        Path prefix = work.resolve("hold-" + (++runs));
        ProcessBuilder pb = new ProcessBuilder(command(holdShared)).directory(work.toFile())
                .redirectOutput(Path.of(prefix + ".out").toFile()).redirectError(Path.of(prefix + ".err").toFile());
        env(extra).forEach((k, v) -> {
            if (v == null) pb.environment().remove(k);
            else pb.environment().put(k, v);
        });
        Holder h = new Holder(pb.start(), prefix);
        holders.add(h);
        return h;
    }

    private void releaseAll() throws Exception {
        for (Holder h : holders) h.process.getOutputStream().close();
        for (Holder h : holders) assertTrue(h.process.waitFor(60, TimeUnit.SECONDS), h.describe());
        holders.clear();
        await("every session ended", 30_000, () -> activeSessions().values().stream().allMatch(n -> n == 0));
    }

    /** Sessions running on each live appliance (its /metrics, labelled with the pool and its name). */
    private Map<String, Integer> activeSessions() throws Exception {
        Map<String, Integer> m = new HashMap<>();
        for (Map.Entry<String, DaemonProcess> e : appliances.entrySet()) {
            Matcher x = Pattern.compile("vmcuda_sessions_active\\{appliance=\"" + e.getKey()
                    + "\",cluster=\"/vmcuda/\"} (\\d+)").matcher(e.getValue().get("/metrics").body());
            assertTrue(x.find(), "no labelled vmcuda_sessions_active on " + e.getKey());
            m.put(e.getKey(), Integer.parseInt(x.group(1)));
        }
        return m;
    }

    private long racesLost() throws Exception {
        long n = 0;
        for (DaemonProcess d : appliances.values()) {
            Matcher x = Pattern.compile("vmcuda_cluster_placement_races_lost_total\\{[^}]*} (\\d+)").matcher(d.get("/metrics").body());
            if (x.find()) n += Long.parseLong(x.group(1));
        }
        return n;
    }

    private String placedOn(ProgramRunner.Result r) {
        return placedOn(r.stderr() + "\n" + r.describe());
    }

    /** The appliance a program's session was opened on, from its VMCUDA_VERBOSE line. */
    private String placedOn(String stderr) {
        Matcher m = SESSION_ON.matcher(stderr);
        assertTrue(m.find(), "no session line in: " + stderr);
        int port = Integer.parseInt(m.group(1));
        for (Map.Entry<String, DaemonProcess> e : appliances.entrySet()) if (e.getValue().port == port) return e.getKey();
        return "port " + port;
    }

    private String clusterJson() throws IOException, InterruptedException {
        return vmcuda("cluster", "--etcd", etcd.url(), "--json");
    }

    private String vmcuda(String... args) throws IOException, InterruptedException {
        List<String> cmd = new ArrayList<>(List.of(root.resolve("bin/vmcuda").toString()));
        cmd.addAll(List.of(args));
        ProgramRunner.Result r = ProgramRunner.run(cmd, Map.of(), work, work.resolve("cli-" + (++runs)));
        return r.exitCode() == 0 ? r.stdout() : "";
    }

    private static void await(String what, long timeoutMs, java.util.concurrent.Callable<Boolean> cond) throws Exception {
        DaemonProcess.await(what, timeoutMs, cond);
    }

    /** A program that keeps its session until its stdin closes; each send() makes it call once more. */
    private static final class Holder {
        final Process process;
        final Path prefix;

        Holder(Process process, Path prefix) {
            this.process = process;
            this.prefix = prefix;
        }

        void awaitFirstCall() throws Exception {
            await("first call of " + prefix.getFileName(), 60_000, () -> stdout().contains("first call:") || !process.isAlive());
            assertTrue(stdout().contains("first call:"), describe());
        }

        void send() throws IOException {
            OutputStream in = process.getOutputStream();
            in.write("again\n".getBytes(StandardCharsets.UTF_8));
            in.flush();
        }

        String stdout() throws IOException {
            Path p = Path.of(prefix + ".out");
            return Files.exists(p) ? Files.readString(p) : "";
        }

        String stderr() throws IOException {
            Path p = Path.of(prefix + ".err");
            return Files.exists(p) ? Files.readString(p) : "";
        }

        String describe() {
            try {
                return prefix.getFileName() + " stdout:\n" + stdout() + "\nstderr:\n" + stderr();
            } catch (IOException e) {
                return prefix + ": " + e;
            }
        }
    }
}
