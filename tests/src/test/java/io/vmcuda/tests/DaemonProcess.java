package io.vmcuda.tests;

import java.io.IOException;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;

/** The real vmcudad, started through bin/vmcudad on loopback with ephemeral ports. */
final class DaemonProcess implements AutoCloseable {

    /** The operator token of the admin port (locked, as these daemons have a tenant). */
    static final String ADMIN_TOKEN = "e2e-operator-token-0123456789abcdef";

    /** How long the daemon may take to answer its admin port (JVM start on a loaded CI box). */
    private static final Duration START_TIMEOUT = Duration.ofSeconds(90);

    final int port;
    final int adminPort;
    final Path stateDir;
    final Path log;
    /** The tenant token the daemon accepts (its config holds only the SHA-256): give it to clients as VMCUDA_TOKEN. */
    final String token;
    final Process process;
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    private DaemonProcess(Process process, int port, int adminPort, Path stateDir, Path log, String token) {
        this.token = token;
        this.process = process;
        this.port = port;
        this.adminPort = adminPort;
        this.stateDir = stateDir;
        this.log = log;
    }

    static DaemonProcess start(Path repoRoot, Path workDir) throws IOException, InterruptedException {
        return start(repoRoot, workDir, java.util.Map.of(), null, "daemon.log");
    }

    /**
     * @param config   extra daemon settings (written to a --config file with a generated tenant token)
     * @param stateDir null for a new one (a restart passes the previous daemon's)
     */
    static DaemonProcess start(Path repoRoot, Path workDir, java.util.Map<String, String> config, Path stateDir,
                               String logName) throws IOException, InterruptedException {
        return start(repoRoot, workDir, config, stateDir, logName, null, java.util.Map.of());
    }

    /**
     * @param token the tenant token (null: a new random one); appliances of one pool share their tenants
     * @param env   extra environment of the daemon (e.g. a PATH whose nvidia-smi describes made-up GPUs)
     */
    static DaemonProcess start(Path repoRoot, Path workDir, java.util.Map<String, String> config, Path stateDir,
                               String logName, String token, java.util.Map<String, String> env)
            throws IOException, InterruptedException {
        if (stateDir == null) {
            stateDir = Files.createTempDirectory(workDir, "state-");
            // a sandboxed worker (the unprivileged worker.user) must reach its session directory and binary
            Files.setPosixFilePermissions(stateDir, java.nio.file.attribute.PosixFilePermissions.fromString("rwxr-xr-x"));
        }
        Path log = workDir.resolve(logName);
        if (token == null) {
            byte[] raw = new byte[32];
            new java.security.SecureRandom().nextBytes(raw);
            token = java.util.HexFormat.of().formatHex(raw);
        }
        StringBuilder conf = new StringBuilder("tenant.e2e.token_sha256 = " + sha256Hex(token) + "\n"
                + "admin.token_sha256 = " + sha256Hex(ADMIN_TOKEN) + "\n");
        if (currentUid() != 0 && !config.containsKey("worker.sandbox")) {
            // not root (a developer's machine): workers cannot be sandboxed, and with a tenant the daemon
            // only accepts that when told so (CI runs as root, with the sandbox)
            conf.append("worker.sandbox = false\n");
        }
        if (!config.containsKey("session.drain_s")) {
            // a test that stops its daemon with sessions running wants them ended at once (DaemonLifecycleTest
            // covers the drain)
            conf.append("session.drain_s = 0\n");
        }
        config.forEach((k, v) -> conf.append(k).append(" = ").append(v).append('\n'));
        Path confFile = stateDir.resolveSibling(stateDir.getFileName() + ".conf");
        Files.writeString(confFile, conf);
        int port = freePort();
        int adminPort = freePort();
        List<String> cmd = new java.util.ArrayList<>(List.of(repoRoot.resolve("bin/vmcudad").toString(),
                "--listen", "127.0.0.1:" + port, "--admin", "127.0.0.1:" + adminPort,
                "--state-dir", stateDir.toString(), "--config", confFile.toString()));
        Path workerLibDir = repoRoot.resolve("appliance/target/native");
        if (Files.isDirectory(workerLibDir)) {
            cmd.add("--worker-lib-dir");
            cmd.add(workerLibDir.toString());
        }
        ProcessBuilder pb = new ProcessBuilder(cmd).directory(workDir.toFile())
                .redirectErrorStream(true).redirectOutput(log.toFile());
        pb.environment().putAll(env);
        Process p = pb.start();
        DaemonProcess d = new DaemonProcess(p, port, adminPort, stateDir, log, token);
        d.awaitAdmin();
        return d;
    }

    private void awaitAdmin() throws IOException, InterruptedException {
        long deadline = System.nanoTime() + START_TIMEOUT.toNanos();
        while (System.nanoTime() < deadline) {
            if (!process.isAlive()) {
                throw new IllegalStateException("vmcudad exited with code " + process.exitValue()
                        + " before answering /status; its log:\n" + Files.readString(log));
            }
            try {
                if (get("/status").statusCode() == 200) return;
            } catch (IOException notYet) {
                // not listening yet
            }
            Thread.sleep(200);
        }
        close();
        throw new IllegalStateException("vmcudad did not answer http://127.0.0.1:" + adminPort + "/status within "
                + START_TIMEOUT.toSeconds() + " s; its log:\n" + Files.readString(log));
    }

    HttpResponse<String> get(String pathAndQuery) throws IOException, InterruptedException {
        HttpRequest req = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + adminPort + pathAndQuery))
                .header("Authorization", "Bearer " + ADMIN_TOKEN).timeout(Duration.ofSeconds(10)).GET().build();
        return http.send(req, HttpResponse.BodyHandlers.ofString());
    }

    String logText() throws IOException {
        return Files.exists(log) ? Files.readString(log) : "";
    }

    /** SIGTERM first so the daemon can reap its workers; then force whatever is left. */
    @Override
    public void close() throws InterruptedException {
        List<ProcessHandle> children = process.descendants().toList();
        process.destroy();
        if (!process.waitFor(15, TimeUnit.SECONDS)) process.destroyForcibly().waitFor();
        children.forEach(ProcessHandle::destroyForcibly);
        unmountSessionDisks();
    }

    /**
     * A daemon that was killed (PoolTest kills one) could not unmount its sessions' tmpfs directories
     * (worker.disk_max); as root, the test does, so that target/ stays removable. A daemon of the same state
     * directory would sweep them at its start; under systemd they go with the unit's mount namespace.
     */
    private void unmountSessionDisks() {
        try {
            for (String mount : sessionDiskMounts()) new ProcessBuilder("umount", "-l", mount).inheritIO().start().waitFor();
        } catch (IOException | InterruptedException e) {
            // best effort: a test's clean-up
        }
    }

    /** The sessions' tmpfs directories (worker.disk_max) of this daemon that are mounted now. */
    List<String> sessionDiskMounts() throws IOException {
        String prefix = stateDir.toRealPath().resolve("sessions") + "/";
        List<String> out = new java.util.ArrayList<>();
        for (String line : java.nio.file.Files.readAllLines(Path.of("/proc/self/mountinfo"))) {
            String[] f = line.split(" ");
            if (f.length > 4 && f[4].startsWith(prefix) && line.contains(" - tmpfs vmcuda-session ")) out.add(f[4]);
        }
        return out;
    }

    /** Polls {@code cond} until it holds; fails the test with {@code what} when it has not within the timeout. */
    static void await(String what, long timeoutMs, java.util.concurrent.Callable<Boolean> cond) throws Exception {
        long deadline = System.nanoTime() + timeoutMs * 1_000_000;
        while (!cond.call()) {
            if (System.nanoTime() > deadline) throw new AssertionError("timed out waiting for: " + what);
            Thread.sleep(20);
        }
    }

    static String sha256Hex(String s) {
        try {
            return java.util.HexFormat.of().formatHex(java.security.MessageDigest.getInstance("SHA-256")
                    .digest(s.getBytes(java.nio.charset.StandardCharsets.UTF_8)));
        } catch (java.security.NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    /** This test JVM's uid (0 = root), -1 when unknown. */
    static long currentUid() {
        try {
            return ((Number) Files.getAttribute(Path.of("/proc/self"), "unix:uid")).longValue();
        } catch (IOException | RuntimeException e) {
            return -1;
        }
    }

    static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
            return s.getLocalPort();
        }
    }
}
