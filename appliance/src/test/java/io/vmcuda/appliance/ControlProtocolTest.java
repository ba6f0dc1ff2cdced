package io.vmcuda.appliance;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.vmcuda.appliance.wire.ProtocolException;
import io.vmcuda.protocol.Wire;
import io.vmcuda.rewriter.ElfRewriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** Malformed and refused session setups against a real daemon: each ends cleanly and the daemon keeps serving. */
@Timeout(60)
class ControlProtocolTest {
    @TempDir
    Path state;
    private DaemonHarness harness;

    @BeforeEach
    void start() throws Exception {
        harness = new DaemonHarness(state, state.resolve("no-worker-lib"), TestInventory.none(),
                Map.of("binary.max_bytes", "100000"));
    }

    @AfterEach
    void stop() {
        harness.close();
    }

    private void assertDaemonStillServes() throws Exception {
        assertEquals(200, harness.get("/status").statusCode());
    }

    @Test
    void badMagicGetsErrorAndClose() throws Exception {
        try (ProtocolClient c = harness.connect()) {
            c.sendRaw(ProtocolClient.header(0x12345678, Wire.TYPE_HELLO, 0));
            ProtocolClient.ErrorFrame e = c.readError();
            assertEquals(ProtocolException.BAD_MAGIC, e.code());
            assertTrue(e.message().contains("magic"), e.message());
            assertTrue(c.peerClosed());
        }
        assertDaemonStillServes();
    }

    @Test
    void unknownTypeGetsErrorAndClose() throws Exception {
        try (ProtocolClient c = harness.connect()) {
            c.sendRaw(ProtocolClient.header(Wire.MAGIC, 99, 0));
            ProtocolClient.ErrorFrame e = c.readError();
            assertEquals(ProtocolException.UNKNOWN_TYPE, e.code());
            assertTrue(c.peerClosed());
        }
        assertDaemonStillServes();
    }

    @Test
    void oversizedLengthIsRejectedBeforeThePayloadArrives() throws Exception {
        try (ProtocolClient c = harness.connect()) {
            // only the header is sent: the daemon must judge the length without waiting for 64 KiB + 1 bytes
            c.sendRaw(ProtocolClient.header(Wire.MAGIC, Wire.TYPE_HELLO, Wire.MAX_CONTROL_PAYLOAD + 1));
            ProtocolClient.ErrorFrame e = c.readError();
            assertEquals(ProtocolException.TOO_LONG, e.code());
            assertTrue(c.peerClosed());
        }
        try (ProtocolClient c = harness.connect()) {
            c.sendRaw(ProtocolClient.header(Wire.MAGIC, Wire.TYPE_BINARY_CHUNK, 0xFFFFFFFFL));
            assertEquals(ProtocolException.TOO_LONG, c.readError().code());
        }
        assertDaemonStillServes();
    }

    @Test
    void truncatedHelloIsMalformed() throws Exception {
        try (ProtocolClient c = harness.connect()) {
            c.sendFrame(Wire.TYPE_HELLO, new byte[10]);
            assertEquals(ProtocolException.MALFORMED, c.readError().code());
            assertTrue(c.peerClosed());
        }
        assertDaemonStillServes();
    }

    @Test
    void helloWithNameLengthPastThePayloadIsMalformed() throws Exception {
        byte[] hello = ProtocolClient.hello(Wire.PROTO_VERSION, 0, 10, new byte[32], 1, 0, new byte[32], "abc");
        // name_len low byte (before "abc" and the 2-byte visible_len): now claims 255+ bytes
        hello[hello.length - Wire.PROOF_BYTES - 7] = (byte) 0xff;
        try (ProtocolClient c = harness.connect()) {
            c.sendFrame(Wire.TYPE_HELLO, hello);
            assertEquals(ProtocolException.MALFORMED, c.readError().code());
        }
    }

    @Test
    void wrongProtocolVersionIsRefused() throws Exception {
        try (ProtocolClient c = harness.connect()) {
            int other = Wire.PROTO_VERSION + 1;
            c.sendFrame(Wire.TYPE_HELLO, ProtocolClient.hello(other, 0, 10, new byte[32], 1, 0, new byte[32], "app"));
            ProtocolClient.Reply r = c.readReply();
            assertEquals(Wire.HELLO_REFUSED, r.status());
            assertEquals("protocol version " + other + ", appliance speaks " + Wire.PROTO_VERSION, r.message());
            assertTrue(c.peerClosed());
        }
        assertTrue(harness.body("/metrics").contains("vmcuda_sessions_refused_total 1.0\n"));
    }

    @Test
    void binaryOverTheSizeLimitIsRefused() throws Exception {
        try (ProtocolClient c = harness.connect()) {
            c.sendFrame(Wire.TYPE_HELLO,
                    ProtocolClient.hello(Wire.PROTO_VERSION, 0, 100001, new byte[32], 1, 0, new byte[32], "big"));
            ProtocolClient.Reply r = c.readReply();
            assertEquals(Wire.HELLO_REFUSED, r.status());
            assertTrue(r.message().contains("100001") && r.message().contains("binary.max_bytes"), r.message());
        }
    }

    @Test
    void uploadWithWrongHashIsRefused() throws Exception {
        byte[] binary = "not what the hash says".getBytes(StandardCharsets.UTF_8);
        byte[] wrongSha = ProtocolClient.sha256("something else".getBytes(StandardCharsets.UTF_8));
        try (ProtocolClient c = harness.connect()) {
            c.sendFrame(Wire.TYPE_HELLO,
                    ProtocolClient.hello(Wire.PROTO_VERSION, 0, binary.length, wrongSha, 1, 0, new byte[32], "app"));
            assertEquals(Wire.HELLO_SEND_BINARY, c.readReply().status());
            c.upload(binary, 7);
            ProtocolClient.Reply r = c.readReply();
            assertEquals(Wire.HELLO_REFUSED, r.status());
            assertTrue(r.message().contains("does not match its SHA-256"), r.message());
            assertTrue(c.peerClosed());
        }
        try (var s = Files.list(state.resolve("cache"))) {
            assertTrue(s.noneMatch(p -> p.getFileName().toString().matches("[0-9a-f]{64}")), "nothing cached");
        }
    }

    @Test
    void moreBytesThanAnnouncedIsRefused() throws Exception {
        byte[] binary = "twelve bytes".getBytes(StandardCharsets.UTF_8);
        try (ProtocolClient c = harness.connect()) {
            c.sendFrame(Wire.TYPE_HELLO,
                    ProtocolClient.hello(Wire.PROTO_VERSION, 0, 5, ProtocolClient.sha256(binary), 1, 0, new byte[32], "app"));
            assertEquals(Wire.HELLO_SEND_BINARY, c.readReply().status());
            c.upload(binary, binary.length);
            ProtocolClient.Reply r = c.readReply();
            assertEquals(Wire.HELLO_REFUSED, r.status());
            assertTrue(r.message().contains("more than"), r.message());
        }
    }

    private static final byte[] UPLOADED = "x".repeat(100).getBytes(StandardCharsets.UTF_8);

    /** A connection whose HELLO announced {@link #UPLOADED} and was answered SEND_BINARY. */
    private ProtocolClient uploading() throws Exception {
        ProtocolClient c = harness.connect();
        c.sendNewHello(UPLOADED, "app");
        assertEquals(Wire.HELLO_SEND_BINARY, c.readReply().status());
        return c;
    }

    /** An upload must make progress: an empty chunk would restart the handshake timeout without sending anything. */
    @Test
    void anEmptyChunkIsAProtocolError() throws Exception {
        try (ProtocolClient c = uploading()) {
            c.sendFrame(Wire.TYPE_BINARY_CHUNK, new byte[10]);
            c.sendFrame(Wire.TYPE_BINARY_CHUNK, new byte[0]);
            ProtocolClient.ErrorFrame e = c.readError();
            assertEquals(ProtocolException.MALFORMED, e.code());
            assertTrue(e.message().contains("empty BINARY_CHUNK"), e.message());
            assertTrue(c.peerClosed());
        }
        assertTrue(harness.body("/metrics").contains("vmcuda_protocol_errors_total 1.0"));
        assertDaemonStillServes();
    }

    /**
     * Each chunk restarts the idle timeout, so a trickle of one-byte chunks kept an upload, its connection and its file
     * for as long as the client liked: an upload must average ControlHandler.MIN_UPLOAD_BYTES_PER_S once it has run
     * longer than twice control.handshake_timeout_s.
     */
    @Test
    void anUploadTrickledAByteAtATimeEndsOnceItHasHadItsTime() throws Exception {
        harness.close();
        harness = new DaemonHarness(state, state.resolve("no-worker-lib"), TestInventory.none(),
                Map.of("binary.max_bytes", "100000", "control.handshake_timeout_s", "1"));
        try (ProtocolClient c = uploading()) {
            long t0 = System.nanoTime();
            ProtocolClient.ErrorFrame e = null;
            for (int i = 0; i < 50 && e == null; i++) { // a byte every 200 ms: never idle for the 1 s timeout
                try {
                    c.sendFrame(Wire.TYPE_BINARY_CHUNK, new byte[1]);
                    Thread.sleep(200);
                } catch (java.io.IOException closed) {
                    break;
                }
            }
            e = c.readError();
            assertEquals(ProtocolException.TIMEOUT, e.code());
            assertTrue(e.message().contains("upload too slow"), e.message());
            assertTrue(c.peerClosed());
            double s = (System.nanoTime() - t0) / 1e9;
            assertTrue(s < 5, "ended after " + s + " s, not soon after the first two seconds");
        }
        assertDaemonStillServes();
    }

    @Test
    void nonElfBinaryIsRefusedWithTheRewritersReason() throws Exception {
        byte[] script = "#!/bin/sh\necho I am not an ELF file\n".getBytes(StandardCharsets.UTF_8);
        Path copy = state.resolve("script.sh");
        Files.write(copy, script);
        String expected = ElfRewriter.check(copy).reason();
        try (ProtocolClient c = harness.connect()) {
            c.sendNewHello(script, "script.sh");
            assertEquals(Wire.HELLO_SEND_BINARY, c.readReply().status());
            c.upload(script, 1000);
            ProtocolClient.Reply r = c.readReply();
            assertEquals(Wire.HELLO_REFUSED, r.status());
            assertEquals(expected, r.message());
            assertTrue(c.peerClosed());
        }
        assertDaemonStillServes();
    }

    @Test
    void joinWithUnknownSessionIsRefused() throws Exception {
        try (ProtocolClient c = harness.connect()) {
            c.sendJoinHello(12345, new byte[32]);
            ProtocolClient.Reply r = c.readReply();
            assertEquals(Wire.HELLO_REFUSED, r.status());
            assertTrue(r.message().contains("unknown session 12345"), r.message());
        }
    }

    @Test
    void framesBeforeTheReplyAreAProtocolError() throws Exception {
        try (ProtocolClient c = uploading()) {
            c.sendNewHello(UPLOADED, "app"); // a HELLO where BINARY_CHUNK belongs
            assertEquals(ProtocolException.UNEXPECTED, c.readError().code());
        }
        assertDaemonStillServes();
    }

    @Test
    void unknownAdminPathIs404() throws Exception {
        assertEquals(404, harness.get("/nope").statusCode());
    }
}
