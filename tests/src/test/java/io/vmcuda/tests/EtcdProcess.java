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

/**
 * A real etcd (Debian's etcd-server; .ci/run installs it) on loopback ports, with its data in a directory
 * of the test, so that it can be stopped and started again on the same data as an operator's would.
 */
final class EtcdProcess implements AutoCloseable {
    private final Path binary;
    private final Path dataDir;
    private final Path log;
    private final int clientPort;
    private final int peerPort;
    private Process process;
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();

    private EtcdProcess(Path binary, Path dataDir, Path log, int clientPort, int peerPort) {
        this.binary = binary;
        this.dataDir = dataDir;
        this.log = log;
        this.clientPort = clientPort;
        this.peerPort = peerPort;
    }

    /** The etcd binary: $ETCD, else etcd on PATH or in /usr/bin; null when there is none. */
    static Path find() {
        String env = System.getenv("ETCD");
        if (env != null && Files.isExecutable(Path.of(env))) return Path.of(env);
        for (String dir : (System.getenv().getOrDefault("PATH", "") + ":/usr/bin:/usr/local/bin").split(":")) {
            if (!dir.isEmpty() && Files.isExecutable(Path.of(dir, "etcd"))) return Path.of(dir, "etcd");
        }
        return null;
    }

    static EtcdProcess start(Path binary, Path workDir) throws IOException, InterruptedException {
        EtcdProcess e = new EtcdProcess(binary, Files.createTempDirectory(workDir, "etcd-"), workDir.resolve("etcd.log"),
                freePort(), freePort());
        e.startAgain();
        return e;
    }

    String url() {
        return "http://127.0.0.1:" + clientPort;
    }

    /** Starts etcd (again) on its data directory and waits until it answers /health. */
    void startAgain() throws IOException, InterruptedException {
        String peer = "http://127.0.0.1:" + peerPort;
        process = new ProcessBuilder(List.of(binary.toString(), "--name", "pooltest", "--data-dir", dataDir.toString(),
                "--listen-client-urls", url(), "--advertise-client-urls", url(),
                "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
                "--initial-cluster", "pooltest=" + peer))
                .redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile())).start();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (System.nanoTime() < deadline) {
            if (!process.isAlive()) throw new IllegalStateException("etcd exited: " + Files.readString(log));
            try {
                HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create(url() + "/health"))
                        .timeout(Duration.ofSeconds(2)).build(), HttpResponse.BodyHandlers.ofString());
                if (r.statusCode() == 200 && r.body().contains("true")) return;
            } catch (IOException notYet) {
                // not listening yet
            }
            Thread.sleep(100);
        }
        throw new IllegalStateException("etcd did not become healthy within 30 s: " + Files.readString(log));
    }

    /** Stops etcd as an operator's restart would (SIGTERM), keeping its data. */
    void stop() throws InterruptedException {
        process.destroy();
        if (!process.waitFor(15, TimeUnit.SECONDS)) process.destroyForcibly().waitFor();
    }

    @Override
    public void close() throws InterruptedException {
        if (process != null && process.isAlive()) stop();
    }

    private static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
            return s.getLocalPort();
        }
    }
}
