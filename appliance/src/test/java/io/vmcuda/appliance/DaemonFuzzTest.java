package io.vmcuda.appliance;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.embedded.EmbeddedChannel;
import io.vmcuda.appliance.auth.Authenticator;
import io.vmcuda.appliance.cache.BinaryCache;
import io.vmcuda.appliance.control.ControlFuzzSupport;
import io.vmcuda.appliance.session.DaemonMetrics;
import io.vmcuda.appliance.session.Refusals;
import io.vmcuda.appliance.session.SessionManager;
import io.vmcuda.appliance.session.SessionRecordLog;
import io.vmcuda.appliance.wire.FrameDecoder;
import io.vmcuda.appliance.wire.ProtocolException;
import io.vmcuda.appliance.wire.UnfinishedFrames;
import io.vmcuda.appliance.worker.WorkerLauncher;
import io.vmcuda.protocol.Wire;
import io.vmcuda.scheduler.GpuScheduler;
import java.io.IOException;
import java.io.InputStream;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Bad input at the daemon's control port. In process: 150,000 connections of random and mutated frames
 * (valid HELLOs with a flipped byte, good and bad tokens, uploads cut short or overrun, lengths 0, 2^31 and
 * u32 max, bad magic, unknown types) through the real decoder and handler. Over TCP against a real daemon:
 * 1,500 more, truncated streams, and slow-loris clients that the handshake timeout must close. Nothing may
 * throw out of the pipeline, hang past its timeout, leave an upload file behind or leak a descriptor.
 * Together with the worker's frame fuzzer (100,000 cases) that is over 250,000 cases per CI run.
 */
@Timeout(180)
class DaemonFuzzTest {
    static final int IN_PROCESS_CASES = Integer.getInteger("vmcuda.fuzz.daemon.cases", 150_000);
    static final int TCP_CASES = Integer.getInteger("vmcuda.fuzz.daemon.tcp.cases", 1_500);
    private static final String TOKEN = "fuzz-token";
    private static final long[] NASTY_LENGTHS = {0, 1, 15, 16, 65535, 65536, 65537, 4L << 20, (4L << 20) + 1,
            0x7fffffffL, 0x80000000L, 0xffffffffL};

    @TempDir
    Path state;

    /** Hundreds of thousands of refusals would be as many log lines: keep the daemon's logger quiet. */
    private static final java.util.logging.Logger VMCUDA_LOG = java.util.logging.Logger.getLogger("io.vmcuda");

    @org.junit.jupiter.api.BeforeEach
    void quiet() {
        VMCUDA_LOG.setLevel(java.util.logging.Level.SEVERE);
    }

    @org.junit.jupiter.api.AfterEach
    void loud() {
        VMCUDA_LOG.setLevel(null);
    }

    private static byte[] header(int magic, int type, int flags, long id, long len) {
        return ByteBuffer.allocate(Wire.HEADER_BYTES).order(ByteOrder.LITTLE_ENDIAN).putInt(magic).putShort((short) type)
                .putShort((short) flags).putInt((int) id).putInt((int) len).array();
    }

    private static byte[] frame(int type, byte[] payload) {
        return ProtocolClient.concat(header(Wire.MAGIC, type, 0, 0, payload.length), payload);
    }

    /** A HELLO proving TOKEN (two in three) or a wrong token for {@code challenge} (null: unknown, never valid). */
    private static byte[] validHello(SplittableRandom r, long size, byte[] sha, byte[] challenge) {
        String token = r.nextInt(3) == 0 ? "wrong" : TOKEN;
        return ProtocolClient.hello(Wire.PROTO_VERSION, r.nextInt(8) == 0 ? Wire.ROLE_JOIN : Wire.ROLE_NEW, size, sha,
                r.nextInt(3), r.nextLong(), new byte[32], "fuzz", token, challenge);
    }

    /** One connection's worth of bytes, written without reading the daemon's challenge. */
    static byte[] randomConnection(SplittableRandom r) {
        return randomConnection(r, null);
    }

    /** One connection's worth of bytes: a mix of well-formed, mutated and garbage frames. */
    static byte[] randomConnection(SplittableRandom r, byte[] challenge) {
        java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream();
        int frames = 1 + r.nextInt(6);
        byte[] body = new byte[1 + r.nextInt(3000)];
        r.nextBytes(body);
        byte[] sha;
        try {
            sha = ProtocolClient.sha256(body);
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
        for (int i = 0; i < frames; i++) {
            int kind = r.nextInt(12);
            byte[] f;
            switch (kind) {
                case 0, 1, 2 -> f = frame(Wire.TYPE_HELLO, validHello(r, body.length, sha, challenge));
                case 3 -> { // a valid HELLO then the whole upload, in pieces
                    f = frame(Wire.TYPE_HELLO, validHello(r, body.length, sha, challenge));
                    int cut = r.nextInt(body.length + 1);
                    f = ProtocolClient.concat(f, frame(Wire.TYPE_BINARY_CHUNK, java.util.Arrays.copyOf(body, cut)),
                            frame(Wire.TYPE_BINARY_CHUNK, java.util.Arrays.copyOfRange(body, cut, body.length)));
                }
                case 4 -> f = frame(Wire.TYPE_BINARY_CHUNK, java.util.Arrays.copyOf(body, r.nextInt(body.length + 1)));
                case 5 -> { // mutated valid HELLO: flip bytes anywhere, header included
                    f = frame(Wire.TYPE_HELLO, validHello(r, body.length, sha, challenge));
                    for (int k = 1 + r.nextInt(4); k > 0; k--) f[r.nextInt(f.length)] ^= (byte) (1 + r.nextInt(255));
                }
                case 6 -> f = header(Wire.MAGIC, 1 + r.nextInt(10), r.nextInt(65536), r.nextInt(),
                        NASTY_LENGTHS[r.nextInt(NASTY_LENGTHS.length)]);
                case 7 -> f = header(r.nextInt(), r.nextInt(65536), 0, 0, r.nextLong() & 0xffffffffL);
                case 8 -> { // random payload with a truthful length
                    byte[] p = new byte[r.nextInt(300)];
                    r.nextBytes(p);
                    f = frame(1 + r.nextInt(9), p);
                }
                case 9 -> { // a HELLO whose inner lengths lie
                    byte[] h = validHello(r, body.length, sha, challenge);
                    int at = 4 + 4 + 8 + 32 + 4 + 8 + 32; // name_len
                    h[at] = (byte) r.nextInt(256);
                    h[at + 1] = (byte) r.nextInt(256);
                    f = frame(Wire.TYPE_HELLO, h);
                }
                case 10 -> { // absurd binary sizes
                    f = frame(Wire.TYPE_HELLO, validHello(r, r.nextBoolean() ? -1L : r.nextLong(), sha, challenge));
                }
                default -> {
                    f = new byte[r.nextInt(64)];
                    r.nextBytes(f);
                }
            }
            if (r.nextInt(10) == 0) f = java.util.Arrays.copyOf(f, r.nextInt(f.length + 1)); // truncated
            out.writeBytes(f);
        }
        return out.toByteArray();
    }

    @Test
    void inProcessControlPipelineSurvivesRandomAndMutatedFrames() throws Exception {
        ScheduledExecutorService timer = Executors.newSingleThreadScheduledExecutor();
        try {
            DaemonMetrics metrics = new DaemonMetrics();
            Refusals refusals = new Refusals(metrics);
            BinaryCache cache = new BinaryCache(state.resolve("cache"), 1 << 20);
            GpuScheduler scheduler = new GpuScheduler(TestInventory.none(),
                    ApplianceConfig.defaultsOnly().schedulerConfig(), timer);
            SessionManager sessions = new SessionManager(scheduler,
                    new WorkerLauncher(state.resolve("w.sock"), state, List.of(), 1 << 22, Map.of()),
                    state.resolve("sessions"), new SessionRecordLog(state.resolve("s.jsonl")), metrics, refusals, timer,
                    Runnable::run, Duration.ofSeconds(5), "none");
            Authenticator auth = new Authenticator(ApplianceConfig.defaultsOnly()
                    .with(Map.of("tenant.f.token_sha256", Authenticator.hashToken(TOKEN))).tenants());
            SplittableRandom r = new SplittableRandom(0x5eedL);
            UnfinishedFrames unfinished = new UnfinishedFrames(1 << 20);
            long t0 = System.nanoTime();
            long bytesOut = 0;
            for (int c = 0; c < IN_PROCESS_CASES; c++) {
                // odd cases the decoder of old (no check by phase, no budget); the rest wired as ControlServer does
                EmbeddedChannel ch = c % 2 == 1 ? new EmbeddedChannel(new FrameDecoder(),
                        ControlFuzzSupport.handler(cache, sessions, refusals, 100_000, auth))
                        : new EmbeddedChannel(ControlFuzzSupport.pipeline(cache, sessions, refusals, 100_000, auth, unfinished));
                // the daemon's first frame is the challenge the valid HELLOs must answer
                ByteBuf challengeFrame = ch.readOutbound();
                byte[] challenge = new byte[Wire.CHALLENGE_BYTES];
                challengeFrame.getBytes(Wire.HEADER_BYTES, challenge);
                bytesOut += challengeFrame.readableBytes();
                challengeFrame.release();
                byte[] in = randomConnection(r, challenge);
                // arrive in random pieces, as TCP may deliver them
                for (int off = 0; off < in.length && ch.isActive(); ) {
                    int n = Math.min(in.length - off, 1 + r.nextInt(512));
                    ch.writeInbound(Unpooled.wrappedBuffer(in, off, n));
                    ch.runPendingTasks();
                    off += n;
                }
                ch.checkException();
                for (Object o; (o = ch.readOutbound()) != null; ) {
                    bytesOut += ((ByteBuf) o).readableBytes();
                    ((ByteBuf) o).release();
                }
                ch.finishAndReleaseAll();
            }
            double secs = (System.nanoTime() - t0) / 1e9;
            System.out.printf("daemon fuzz (in process): %d connections in %.1f s, %d bytes answered, %d refusals, "
                    + "%d auth failures, %d protocol errors%n", IN_PROCESS_CASES, secs, bytesOut, metrics.refusedTotal(),
                    metrics.authFailures(), metrics.protocolErrors());
            assertTrue(metrics.authFailures() > 1000 && metrics.protocolErrors() > 1000 && metrics.refusedTotal() > 1000,
                    "the cases reached every stage");
            assertNoLeftovers(state.resolve("cache"));
            assertEquals(0, unfinished.heldBytes(), "every frame received in part gave its bytes back at its close");
        } finally {
            timer.shutdownNow();
        }
    }

    private static void assertNoLeftovers(Path cacheDir) throws IOException {
        try (Stream<Path> s = Files.walk(cacheDir)) {
            List<Path> files = s.filter(Files::isRegularFile).toList();
            assertEquals(List.of(), files, "no upload file, staging directory or entry may remain");
        }
    }

    private static int openFds() throws IOException {
        try (Stream<Path> s = Files.list(Path.of("/proc/self/fd"))) {
            return (int) s.count();
        }
    }

    /** Reads until the daemon closes; fails if it has not within the limit. */
    private static void awaitClose(Socket s, long limitMs) throws IOException {
        s.setSoTimeout((int) limitMs);
        InputStream in = s.getInputStream();
        byte[] buf = new byte[65536];
        long deadline = System.nanoTime() + limitMs * 1_000_000;
        try {
            while (in.read(buf) >= 0) {
                if (System.nanoTime() > deadline) throw new AssertionError("daemon kept the connection open");
            }
        } catch (SocketTimeoutException e) {
            throw new AssertionError("daemon did not close a bad connection within " + limitMs + " ms");
        } catch (IOException reset) {
            // closed with RST: also closed
        }
    }

    @Test
    void realDaemonOverTcpClosesEveryBadConnectionAndLeaksNothing() throws Exception {
        try (DaemonHarness d = new DaemonHarness(state, state.resolve("no-lib"), TestInventory.none(), Map.of(
                "binary.max_bytes", "100000", "control.handshake_timeout_s", "1",
                // thousands of wrong proofs from this one address: no lockout here (AuthTest covers it)
                "control.auth_failures_per_minute", "0",
                "tenant.f.token_sha256", Authenticator.hashToken(TOKEN)))) {
            // warm up so that lazily opened descriptors (JIT, Netty) are in the baseline
            for (int i = 0; i < 20; i++) {
                try (Socket s = new Socket("127.0.0.1", d.daemon.controlAddress().getPort())) {
                    s.getOutputStream().write(randomConnection(new SplittableRandom(i)));
                    s.shutdownOutput();
                    awaitClose(s, 5000);
                }
            }
            int fdsBefore = openFds();
            SplittableRandom r = new SplittableRandom(42);
            long t0 = System.nanoTime();
            for (int c = 0; c < TCP_CASES; c++) {
                try (Socket s = new Socket("127.0.0.1", d.daemon.controlAddress().getPort())) {
                    s.setSoLinger(true, 0); // RST on close: no TIME_WAIT pile-up over thousands of cases
                    try {
                        s.getOutputStream().write(randomConnection(r));
                        if (r.nextBoolean()) s.shutdownOutput(); // truncated stream: EOF mid-frame
                    } catch (IOException closedAlready) {
                        // the daemon may close before we finish writing
                    }
                    if (r.nextInt(4) == 0) awaitClose(s, 5000);
                }
            }
            System.out.printf("daemon fuzz (TCP): %d connections in %.1f s%n", TCP_CASES, (System.nanoTime() - t0) / 1e9);

            // slow loris: a HELLO dribbled a byte at a time, a silent client, a stalled upload
            long t1 = System.nanoTime();
            try (Socket silent = new Socket("127.0.0.1", d.daemon.controlAddress().getPort());
                 Socket loris = new Socket("127.0.0.1", d.daemon.controlAddress().getPort())) {
                byte[] hello = frame(Wire.TYPE_HELLO, validHello(new SplittableRandom(1), 10, new byte[32], null));
                Thread dribble = new Thread(() -> {
                    try {
                        for (byte b : hello) {
                            loris.getOutputStream().write(b);
                            Thread.sleep(100);
                        }
                    } catch (Exception closed) {
                        // expected: the daemon hangs up
                    }
                });
                dribble.start();
                ProtocolClient.ErrorFrame e = readError(silent);
                assertEquals(ProtocolException.TIMEOUT, e.code());
                assertTrue(e.message().contains("no HELLO within 1 s"), e.message());
                awaitClose(loris, 5000);
                dribble.join();
            }
            assertTrue((System.nanoTime() - t1) / 1e9 < 4.5, "timeouts fired late");
            try (ProtocolClient c = d.connect()) {
                byte[] body = new byte[5000];
                c.sendNewHello(body, "stall", TOKEN, 1);
                assertEquals(Wire.HELLO_SEND_BINARY, c.readReply().status());
                c.sendFrame(Wire.TYPE_BINARY_CHUNK, new byte[100]); // then nothing more
                ProtocolClient.ErrorFrame e = c.readError();
                assertEquals(ProtocolException.TIMEOUT, e.code());
                assertTrue(e.message().contains("no BINARY_CHUNK"), e.message());
                assertTrue(c.peerClosed());
            }

            assertEquals(200, d.get("/status").statusCode(), "daemon still serves");
            String metrics = d.body("/metrics");
            assertTrue(metrics.contains("vmcuda_handshake_timeouts_total"), metrics);
            // every connection is closed on the daemon's side: descriptors back to the baseline
            long deadline = System.nanoTime() + 10_000_000_000L;
            int fdsAfter = openFds();
            while (fdsAfter > fdsBefore + 2 && System.nanoTime() < deadline) {
                Thread.sleep(100);
                fdsAfter = openFds();
            }
            assertTrue(fdsAfter <= fdsBefore + 2, "descriptors before " + fdsBefore + ", after " + fdsAfter);
            Thread.sleep(200);
            assertNoLeftovers(state.resolve("cache"));
        }
    }

    private static ProtocolClient.ErrorFrame readError(Socket s) throws IOException {
        s.setSoTimeout(5000);
        java.io.DataInputStream in = new java.io.DataInputStream(s.getInputStream());
        byte[] h = new byte[Wire.HEADER_BYTES];
        in.readFully(h);
        ByteBuffer b = ByteBuffer.wrap(h).order(ByteOrder.LITTLE_ENDIAN);
        if (b.getShort(4) == Wire.TYPE_CHALLENGE) { // the daemon's opening frame: skip it
            in.readFully(new byte[b.getInt(12)]);
            in.readFully(h);
            b = ByteBuffer.wrap(h).order(ByteOrder.LITTLE_ENDIAN);
        }
        assertEquals(Wire.MAGIC, b.getInt());
        assertEquals(Wire.TYPE_ERROR, b.getShort());
        b.getShort();
        b.getInt();
        byte[] p = new byte[b.getInt()];
        in.readFully(p);
        ByteBuffer pb = ByteBuffer.wrap(p).order(ByteOrder.LITTLE_ENDIAN);
        int code = pb.getInt();
        byte[] msg = new byte[Short.toUnsignedInt(pb.getShort())];
        pb.get(msg);
        return new ProtocolClient.ErrorFrame(code, new String(msg, StandardCharsets.UTF_8));
    }
}
