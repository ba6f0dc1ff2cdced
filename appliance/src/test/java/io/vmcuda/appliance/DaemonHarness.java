package io.vmcuda.appliance;

import io.vmcuda.scheduler.GpuInventory;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;

/** A real in-process daemon on ephemeral loopback ports, plus an HTTP getter for its admin port. */
final class DaemonHarness implements AutoCloseable {
    private static final HttpClient HTTP = HttpClient.newHttpClient();
    /** The operator token of every harness daemon (its admin port is locked whenever tenants are configured). */
    static final String ADMIN_TOKEN = "harness-operator-token-0123456789abcdef";

    final Daemon daemon;
    private final Path stateDir;

    DaemonHarness(Path stateDir, Path workerLibDir, GpuInventory inventory, Map<String, String> config)
            throws IOException, InterruptedException {
        this(stateDir, workerLibDir, inventory, config, "127.0.0.1");
    }

    /** @param listenHost the control port's address ("0.0.0.0" needs a tenant in {@code config}) */
    DaemonHarness(Path stateDir, Path workerLibDir, GpuInventory inventory, Map<String, String> config, String listenHost)
            throws IOException, InterruptedException {
        this.stateDir = stateDir;
        InetSocketAddress any = new InetSocketAddress("127.0.0.1", 0);
        InetSocketAddress listen = new InetSocketAddress(listenHost, 0);
        // the fixtures' fake workers run unsandboxed unless a test asks for the sandbox
        // and a daemon closed with sessions running ends them at once (DaemonLifecycleTest covers the drain)
        Map<String, String> c = new java.util.HashMap<>(Map.of("worker.sandbox", "false", "session.drain_s", "0",
                "admin.token_sha256", io.vmcuda.appliance.auth.Authenticator.hashToken(ADMIN_TOKEN)));
        c.putAll(config);
        daemon = Daemon.start(new DaemonOptions(listen, any, stateDir, null, workerLibDir),
                ApplianceConfig.defaultsOnly().with(c), inventory);
    }

    ProtocolClient connect() throws IOException {
        InetSocketAddress a = daemon.controlAddress();
        return new ProtocolClient(a.getAddress().isAnyLocalAddress() ? new InetSocketAddress("127.0.0.1", a.getPort()) : a);
    }

    /** A connection to the control port at {@code host} (the daemon listening on every address). */
    ProtocolClient connectTo(java.net.InetAddress host) throws IOException {
        return new ProtocolClient(new InetSocketAddress(host, daemon.controlAddress().getPort()));
    }

    /** A connection from another local address (127.0.0.2...): another client host, as far as the daemon sees. */
    ProtocolClient connectFrom(String localAddress) throws IOException {
        return new ProtocolClient(daemon.controlAddress(), java.net.InetAddress.getByName(localAddress));
    }

    /** Polls until {@code condition} holds; the test's own timeout bounds the wait. */
    static void await(java.util.concurrent.Callable<Boolean> condition) throws Exception {
        while (!condition.call()) Thread.sleep(20);
    }

    /**
     * The session records (sessions.jsonl) once {@code condition} holds for them: a session's record is written
     * after its clean-up, a little after it stopped counting as active. The test's own timeout bounds the wait.
     */
    String awaitRecords(java.util.function.Predicate<String> condition) throws Exception {
        Path f = stateDir.resolve("sessions.jsonl");
        await(() -> Files.exists(f) && condition.test(Files.readString(f)));
        return Files.readString(f);
    }

    /** GET with the operator token. */
    HttpResponse<String> get(String pathAndQuery) throws IOException, InterruptedException {
        return get(pathAndQuery, ADMIN_TOKEN);
    }

    /** GET with {@code token} as the bearer token, or with no Authorization header when it is null. */
    HttpResponse<String> get(String pathAndQuery, String token) throws IOException, InterruptedException {
        InetSocketAddress a = daemon.adminAddress();
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + a.getPort() + pathAndQuery));
        if (token != null) b.header("Authorization", "Bearer " + token);
        return HTTP.send(b.build(), HttpResponse.BodyHandlers.ofString());
    }

    String body(String pathAndQuery) throws IOException, InterruptedException {
        return get(pathAndQuery).body();
    }

    /** Re-reads an admin page until it satisfies the condition; the test's own timeout bounds the wait. */
    String awaitBody(String pathAndQuery, java.util.function.Predicate<String> condition)
            throws IOException, InterruptedException {
        while (true) {
            String b = body(pathAndQuery);
            if (condition.test(b)) return b;
            Thread.sleep(20);
        }
    }

    @Override
    public void close() {
        daemon.close();
    }
}
