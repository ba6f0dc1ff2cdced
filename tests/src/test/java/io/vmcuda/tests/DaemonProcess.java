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

    /** How long the daemon may take to answer its admin port (JVM start on a loaded CI box). */
    private static final Duration START_TIMEOUT = Duration.ofSeconds(90);

    final int port;
    final int adminPort;
    final Path stateDir;
    final Path log;
    private final Process process;
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    private DaemonProcess(Process process, int port, int adminPort, Path stateDir, Path log) {
        this.process = process;
        this.port = port;
        this.adminPort = adminPort;
        this.stateDir = stateDir;
        this.log = log;
    }

    static DaemonProcess start(Path repoRoot, Path workDir) throws IOException, InterruptedException {
        Path stateDir = Files.createTempDirectory(workDir, "state-");
        Path log = workDir.resolve("daemon.log");
        int port = freePort();
        int adminPort = freePort();
        List<String> cmd = new java.util.ArrayList<>(List.of(repoRoot.resolve("bin/vmcudad").toString(),
                "--listen", "127.0.0.1:" + port, "--admin", "127.0.0.1:" + adminPort,
                "--state-dir", stateDir.toString()));
        Path workerLibDir = repoRoot.resolve("appliance/target/native");
        if (Files.isDirectory(workerLibDir)) {
            cmd.add("--worker-lib-dir");
            cmd.add(workerLibDir.toString());
        }
        Process p = new ProcessBuilder(cmd).directory(workDir.toFile())
                .redirectErrorStream(true).redirectOutput(log.toFile()).start();
        DaemonProcess d = new DaemonProcess(p, port, adminPort, stateDir, log);
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
                .timeout(Duration.ofSeconds(10)).GET().build();
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
    }

    private static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
            return s.getLocalPort();
        }
    }
}
