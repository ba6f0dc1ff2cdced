package io.vmcuda.appliance;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.ByteBufAllocatorMetricProvider;
import io.vmcuda.appliance.auth.Authenticator;
import io.vmcuda.appliance.wire.ProtocolException;
import io.vmcuda.protocol.Wire;
import java.lang.management.BufferPoolMXBean;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Frames a client sends only in part cannot take the daemon's memory (control.max_unfinished_frame_bytes, FrameDecoder).
 * The attack it answers: a tenant's connections each announced a 4 MiB BINARY_CHUNK and sent most of it slowly; the
 * daemon gathered every chunk in an 8 MiB direct buffer, 250 connections ran it out of direct memory, and another
 * tenant's connections got no CHALLENGE until the attacker's timed out.
 */
@Timeout(120)
class UnfinishedFramesTest {
    private static final String TOKEN_A = Authenticator.generateToken();
    private static final String TOKEN_B = Authenticator.generateToken();
    private static final int ATTACK_CONNECTIONS = 32;
    private static final int SENT_OF_EACH_CHUNK = 2 << 20;
    private static NativeFixtures fixtures;
    private static byte[] binary;

    @TempDir
    Path state;

    @BeforeAll
    static void build() throws Exception {
        fixtures = NativeFixtures.get();
        binary = Files.readAllBytes(fixtures.fakeWorker);
    }

    private DaemonHarness daemon(long unfinishedFrameBytes) throws Exception {
        return new DaemonHarness(state, fixtures.workerLibDir(), TestInventory.gpus(2), Map.of(
                "tenant.alice.token_sha256", Authenticator.hashToken(TOKEN_A),
                "tenant.bob.token_sha256", Authenticator.hashToken(TOKEN_B),
                "control.max_unfinished_frame_bytes", Long.toString(unfinishedFrameBytes)));
    }

    /** Bob's whole handshake: HELLO, the upload, READY, and the worker's MANIFEST. */
    private static void assertBobGetsASession(DaemonHarness d) throws Exception {
        try (ProtocolClient b = d.connect()) {
            assertTrue(b.challenge != null, "bob is sent his CHALLENGE");
            b.sendNewHello(binary, "bob-app", TOKEN_B, 1);
            ProtocolClient.Reply r = b.readReply();
            if (r.status() == Wire.HELLO_SEND_BINARY) {
                b.upload(binary, Wire.MAX_BINARY_CHUNK);
                r = b.readReply();
            }
            assertEquals(Wire.HELLO_READY, r.status(), r.message());
            assertEquals(Wire.TYPE_MANIFEST, b.readFrame().type());
        }
    }

    /**
     * Direct memory in use in this JVM (the in-process daemon's): Netty's allocator's own figure and the JDK's count
     * of direct buffers (what "Cannot reserve N bytes of direct buffer memory" is about), whichever is larger.
     */
    private static long directBytes() {
        long jdk = ManagementFactory.getPlatformMXBeans(BufferPoolMXBean.class).stream()
                .filter(p -> p.getName().equals("direct")).mapToLong(BufferPoolMXBean::getMemoryUsed).sum();
        long netty = ByteBufAllocator.DEFAULT instanceof ByteBufAllocatorMetricProvider m ? m.metric().usedDirectMemory() : 0;
        return Math.max(jdk, netty);
    }

    private long uploadedBytes() throws Exception {
        try (Stream<Path> s = Files.walk(state.resolve("cache"))) {
            return s.filter(p -> p.getFileName().toString().startsWith("upload-")).mapToLong(p -> p.toFile().length()).sum();
        }
    }

    @Test
    void chunksSentInPartGoToTheUploadFileNotToMemoryAndOtherTenantsGoOn() throws Exception {
        List<ProtocolClient> attack = new ArrayList<>();
        try (DaemonHarness d = daemon(32L << 20)) {
            assertBobGetsASession(d); // warms the allocator up: its first buffers are not the attack's
            long before = directBytes();
            SecureRandom random = new SecureRandom();
            byte[] part = new byte[SENT_OF_EACH_CHUNK];
            for (int i = 0; i < ATTACK_CONNECTIONS; i++) {
                ProtocolClient c = d.connect();
                attack.add(c);
                byte[] sha = new byte[32];
                random.nextBytes(sha); // a binary nobody has: the daemon asks for it
                c.sendFrame(Wire.TYPE_HELLO, ProtocolClient.hello(Wire.PROTO_VERSION, Wire.ROLE_NEW, 64L << 20, sha, 1, 0,
                        new byte[32], "slow-chunks", TOKEN_A, c.challenge));
                ProtocolClient.Reply r = c.readReply();
                assertEquals(Wire.HELLO_SEND_BINARY, r.status(), r.message());
                c.sendRaw(ProtocolClient.header(Wire.MAGIC, Wire.TYPE_BINARY_CHUNK, Wire.MAX_BINARY_CHUNK));
                c.sendRaw(part); // and the rest of the chunk never
            }
            // every byte sent arrives in the upload files while the chunks are unfinished...
            long sent = (long) ATTACK_CONNECTIONS * SENT_OF_EACH_CHUNK;
            long deadline = System.nanoTime() + 5_000_000_000L; // within control.handshake_timeout_s (10 s)
            while (uploadedBytes() < sent && System.nanoTime() < deadline) Thread.sleep(20);
            assertEquals(sent, uploadedBytes(), "the chunks' bytes are in the upload files, not held in memory");
            // ...and the daemon holds far less memory than they (before: 32 x 4 MiB buffers, 128 MiB)
            long grown = directBytes() - before;
            System.out.printf("unfinished chunks: %d bytes sent, direct memory grew by %d bytes%n", sent, grown);
            assertTrue(grown < 24L << 20, "direct memory grew by " + grown + " bytes with " + sent + " bytes of unfinished chunks");
            assertBobGetsASession(d);
        } finally {
            for (ProtocolClient c : attack) c.close();
        }
    }

    @Test
    void helloFramesSentInPartShareABudgetAndWholeOnesNeedNone() throws Exception {
        List<ProtocolClient> held = new ArrayList<>();
        int fit = 4;
        try (DaemonHarness d = daemon((long) fit * Wire.MAX_CONTROL_PAYLOAD)) {
            for (int i = 0; i < fit; i++) { // unauthenticated: nobody knows who they are yet
                ProtocolClient c = d.connect();
                held.add(c);
                c.sendRaw(ProtocolClient.header(Wire.MAGIC, Wire.TYPE_HELLO, Wire.MAX_CONTROL_PAYLOAD));
                c.sendRaw(new byte[1000]);
            }
            // the budget is spent only after the daemon has read those headers: retry until it refuses
            ProtocolClient.ErrorFrame refused = null;
            for (int tries = 0; refused == null && tries < 100; tries++) {
                try (ProtocolClient over = d.connect()) {
                    over.sendRaw(ProtocolClient.header(Wire.MAGIC, Wire.TYPE_HELLO, Wire.MAX_CONTROL_PAYLOAD));
                    over.sendRaw(new byte[1000]);
                    // a connection inside the budget is left waiting: the refusal comes at once or not at all
                    over.socketTimeout(300);
                    try {
                        refused = over.readError();
                    } catch (java.net.SocketTimeoutException inside) {
                        Thread.sleep(20);
                    }
                }
            }
            assertTrue(refused != null, "a frame past the budget is refused");
            assertEquals(ProtocolException.TOO_MANY, refused.code());
            assertTrue(refused.message().contains("control.max_unfinished_frame_bytes"), refused.message());
            // a HELLO that arrives whole holds nothing: bob's handshake and session go on
            assertBobGetsASession(d);
            // the held frames' bytes come back with their connections
            for (ProtocolClient c : held) c.close();
            held.clear();
            boolean admitted = false;
            for (int tries = 0; !admitted && tries < 100; tries++) {
                try (ProtocolClient again = d.connect()) {
                    again.sendRaw(ProtocolClient.header(Wire.MAGIC, Wire.TYPE_HELLO, Wire.MAX_CONTROL_PAYLOAD));
                    again.sendRaw(new byte[1000]);
                    again.socketTimeout(300);
                    try {
                        again.readError();
                        Thread.sleep(20);
                    } catch (java.net.SocketTimeoutException waiting) {
                        admitted = true;
                    }
                }
            }
            assertTrue(admitted, "a frame in part is taken again once the others' connections closed");
        } finally {
            for (ProtocolClient c : held) c.close();
        }
    }
}
