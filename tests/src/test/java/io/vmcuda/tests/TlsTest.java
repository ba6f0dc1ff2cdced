package io.vmcuda.tests;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * TLS on the wire (PROTOCOL.md "Encryption") end to end: the real daemon with a certificate, its sandboxed
 * workers (CI's stand-in driver, so every copy really moves its bytes), the real client. A recording proxy
 * between client and appliance sees every byte of the session, handshake, calls and bulk copies (the socket the
 * daemon hands to the worker is the proxy's): with TLS none of the program's data and not its name appear in
 * it, and the same run without TLS shows both there, so the check can tell. Also: a client that does not trust
 * the appliance's certificate, or whose certificate names another host, is refused with the reason, and a
 * client that does not speak TLS to an appliance that wants it is told what to set.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class TlsTest {
    private StandInDriver at;
    private String expected;

    @BeforeAll
    void locate() throws Exception {
        at = StandInDriver.locate("tls", "drv_bulk");
        expected = Files.readString(at.root().resolve("tests/driver/drv_bulk.expected"));
        // the certificates are made with the openssl command, as an operator makes them (packaging does too)
        run(at.root().resolve("client-shim/src/build/ensure-package.sh").toString(), "openssl", "openssl (Fedora)",
                "TlsTest's certificates", "/usr/bin/openssl");
        certificate("appliance", "IP:127.0.0.1,DNS:localhost");
        certificate("elsewhere", "DNS:elsewhere.example");
        certificate("stranger", "IP:127.0.0.1");
    }

    private void certificate(String name, String subjectAltName) throws Exception {
        run("openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                "-keyout", at.work().resolve(name + ".key").toString(), "-out", at.work().resolve(name + ".pem").toString(),
                "-days", "2", "-subj", "/CN=" + name, "-addext", "subjectAltName=" + subjectAltName);
    }

    private static void run(String... cmd) throws Exception {
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertEquals(0, p.waitFor(), String.join(" ", cmd) + "\n" + out);
    }

    /** A daemon whose workers use the stand-in driver; {@code cert} null: no TLS. */
    private DaemonProcess daemon(String cert, String log, Map<String, String> more) throws Exception {
        Map<String, String> config = new HashMap<>(at.workerConfig());
        if (cert != null) {
            config.put("control.tls_certificate", at.work().resolve(cert + ".pem").toString());
            config.put("control.tls_key", at.work().resolve(cert + ".key").toString());
        }
        config.putAll(more);
        return DaemonProcess.start(at.root(), at.work(), config, null, log);
    }

    /** Everything over the socket: calls (no call pipe) and copies (no shared-memory ring), as from another host. */
    private Map<String, String> clientEnv(DaemonProcess d, String ca) {
        Map<String, String> env = new HashMap<>();
        env.put("LD_LIBRARY_PATH", at.cudaLib().toString());
        env.put("VMCUDA_TOKEN", d.token);
        env.put("VMCUDA_TRANSPORT", "tcp");
        env.put("VMCUDA_CALLS_IN_REGION", "0");
        if (ca != null) env.put("VMCUDA_TLS_CA", at.work().resolve(ca + ".pem").toString());
        return env;
    }

    private ProgramRunner.Result drvBulk(String appliance, Map<String, String> env, String name) throws Exception {
        List<String> cmd = List.of(at.root().resolve("bin/vmcuda").toString(), "run", "--appliance", appliance, "--",
                at.driverDir().resolve("drv_bulk").toString());
        return ProgramRunner.run(cmd, env, at.driverDir(), at.work().resolve(name));
    }

    /** drv_bulk's first host buffer (fill(out, MAX, 1) in tests/driver/drv_bulk.c), 64 bytes of it. */
    private static byte[] copiedBytes() {
        byte[] b = new byte[64];
        for (int i = 0; i < b.length; i++) b[i] = (byte) (i * 131 + 7 + (i >> 12));
        return b;
    }

    private static boolean contains(byte[] hay, byte[] needle) {
        outer:
        for (int i = 0; i + needle.length <= hay.length; i++) {
            for (int j = 0; j < needle.length; j++) if (hay[i + j] != needle[j]) continue outer;
            return true;
        }
        return false;
    }

    /** What a passive observer between client and appliance sees, and how much of it there is. */
    private void assertSeen(boolean plainExpected, DaemonProcess d, String ca, String name) throws Exception {
        try (RecordingProxy proxy = new RecordingProxy(d.port)) {
            ProgramRunner.Result r = drvBulk("127.0.0.1:" + proxy.port(), clientEnv(d, ca), name);
            String ctx = "\n" + r.describe() + "--- daemon ---\n" + d.logText();
            assertEquals(expected, r.stdout(), ctx);
            assertEquals(0, r.exitCode(), ctx);
            byte[] seen = proxy.seen();
            // drv_bulk moves about 200 MB both ways: all of it crossed the proxy (and so, with TLS, was encrypted)
            assertTrue(seen.length > 150_000_000, "only " + seen.length + " bytes crossed the proxy" + ctx);
            assertEquals(plainExpected, contains(seen, copiedBytes()), "the program's copied bytes on the wire" + ctx);
            assertEquals(plainExpected, contains(seen, "drv_bulk".getBytes(StandardCharsets.US_ASCII)),
                    "the program's name on the wire" + ctx);
        }
    }

    @Test
    void withTlsAnObserverOnTheWireSeesNeitherTheCopiedDataNorTheProgram() throws Exception {
        try (DaemonProcess d = daemon("appliance", "daemon-tls.log", Map.of())) {
            assertSeen(false, d, "appliance", "drv_bulk-tls");
            assertTrue(d.logText().contains("client connections use TLS 1.3"), d.logText());
        }
    }

    @Test
    void withoutTlsTheSameObserverSeesBoth() throws Exception {
        try (DaemonProcess d = daemon(null, "daemon-plain.log", Map.of())) {
            assertSeen(true, d, null, "drv_bulk-plain");
            assertTrue(d.logText().contains("client connections are not encrypted"), d.logText());
        }
    }

    @Test
    void threadsJoiningTheSessionEachGetTheirOwnEncryptedLink() throws Exception {
        try (DaemonProcess d = daemon("appliance", "daemon-tls-threads.log", Map.of())) {
            List<String> cmd = List.of(at.root().resolve("bin/vmcuda").toString(), "run", "--appliance",
                    "127.0.0.1:" + d.port, "--", at.driverDir().resolve("drv_threads").toString());
            ProgramRunner.Result r = ProgramRunner.run(cmd, clientEnv(d, "appliance"), at.driverDir(), at.work().resolve("drv_threads-tls"));
            String ctx = "\n" + r.describe() + "--- daemon ---\n" + d.logText();
            assertEquals(Files.readString(at.root().resolve("tests/driver/drv_threads.expected")), r.stdout(), ctx);
            assertEquals(0, r.exitCode(), ctx);
        }
    }

    @Test
    void aClientThatDoesNotTrustTheAppliancesCertificateIsRefusedWithTheReason() throws Exception {
        try (DaemonProcess d = daemon("appliance", "daemon-tls-refusals.log", Map.of("control.handshake_timeout_s", "2"))) {
            String at = "127.0.0.1:" + d.port;
            ProgramRunner.Result stranger = drvBulk(at, clientEnv(d, "stranger"), "drv_bulk-stranger");
            assertNotEquals(0, stranger.exitCode(), stranger.describe());
            assertTrue(stranger.stderr().contains("TLS with the appliance 127.0.0.1 failed: its certificate"), stranger.describe());

            ProgramRunner.Result plain = drvBulk(at, clientEnv(d, null), "drv_bulk-no-tls");
            assertNotEquals(0, plain.exitCode(), plain.describe());
            assertTrue(plain.stderr().contains("set tls_ca"), plain.describe());
            assertFalse(d.logText().contains("session ") && d.logText().contains(" ready: drv_bulk"), d.logText());
        }
    }

    @Test
    void theCertificateMustNameTheApplianceUnlessTheClientSaysOtherwise() throws Exception {
        try (DaemonProcess d = daemon("elsewhere", "daemon-tls-name.log", Map.of())) {
            String at = "127.0.0.1:" + d.port;
            ProgramRunner.Result checked = drvBulk(at, clientEnv(d, "elsewhere"), "drv_bulk-name-checked");
            assertNotEquals(0, checked.exitCode(), checked.describe());
            assertTrue(checked.stderr().contains("its certificate: "), checked.describe());

            Map<String, String> env = clientEnv(d, "elsewhere");
            env.put("VMCUDA_TLS_VERIFY_NAME", "false"); // the operator pinned this very certificate
            ProgramRunner.Result pinned = drvBulk(at, env, "drv_bulk-name-unchecked");
            assertEquals(expected, pinned.stdout(), pinned.describe());
            assertEquals(0, pinned.exitCode(), pinned.describe());
        }
    }

    /** Forwards one appliance port, keeping a copy of every byte in both directions. */
    private static final class RecordingProxy implements AutoCloseable {
        private final ServerSocket server = new ServerSocket(0, 64, InetAddress.getLoopbackAddress());
        private final ByteArrayOutputStream seen = new ByteArrayOutputStream();
        private final List<Socket> sockets = new ArrayList<>();
        private final int target;

        RecordingProxy(int target) throws IOException {
            this.target = target;
            Thread accept = new Thread(this::accept, "tls-test-proxy");
            accept.setDaemon(true);
            accept.start();
        }

        int port() {
            return server.getLocalPort();
        }

        byte[] seen() {
            synchronized (seen) {
                return seen.toByteArray();
            }
        }

        private void accept() {
            try {
                for (;;) {
                    Socket client = server.accept();
                    Socket appliance = new Socket(InetAddress.getLoopbackAddress(), target);
                    synchronized (sockets) {
                        sockets.add(client);
                        sockets.add(appliance);
                    }
                    pump(client, appliance);
                    pump(appliance, client);
                }
            } catch (IOException closed) {
                // the test is over
            }
        }

        private void pump(Socket from, Socket to) {
            Thread t = new Thread(() -> {
                byte[] buf = new byte[1 << 16];
                try {
                    // not closed here: closing a socket's stream closes the socket, and the other direction lives on
                    InputStream in = from.getInputStream();
                    OutputStream out = to.getOutputStream();
                    for (int n; (n = in.read(buf)) > 0; ) {
                        synchronized (seen) {
                            seen.write(buf, 0, n);
                        }
                        out.write(buf, 0, n);
                    }
                } catch (IOException gone) {
                    // one side closed
                } finally {
                    try {
                        to.shutdownOutput();
                    } catch (IOException ignored) {
                        // already closed
                    }
                }
            }, "tls-test-pump");
            t.setDaemon(true);
            t.start();
        }

        @Override
        public void close() throws IOException {
            server.close();
            synchronized (sockets) {
                for (Socket s : sockets) s.close();
            }
        }
    }
}
