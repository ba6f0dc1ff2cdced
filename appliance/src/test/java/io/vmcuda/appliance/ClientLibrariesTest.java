package io.vmcuda.appliance;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.vmcuda.protocol.Wire;
import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * A shipped program that needs a shared library only its client has (PROTOCOL.md "Client libraries"), against a
 * real daemon and real (fake) workers: the daemon names the library, takes it by content, starts the worker with
 * it, and asks a later session of the same tenant for nothing but the list; every malformed or lying answer is
 * refused with the reason and the daemon goes on serving.
 */
@Timeout(120)
class ClientLibrariesTest {
    private static final String LIB = "libvmcfix_client_only.so";
    private static NativeFixtures fixtures;
    private static byte[] program;
    private static byte[] library;

    @TempDir
    Path state;

    @BeforeAll
    static void build() throws Exception {
        fixtures = NativeFixtures.get();
        program = Files.readAllBytes(fixtures.needsClientLibrary);
        library = Files.readAllBytes(fixtures.clientOnlyLibrary);
    }

    private DaemonHarness daemon() throws Exception {
        return new DaemonHarness(state, fixtures.workerLibDir(), TestInventory.none(), Map.of());
    }

    /** HELLO and the upload of the program: the daemon's next answer. */
    private static ProtocolClient.Reply helloAndProgram(ProtocolClient c) throws Exception {
        c.sendNewHello(program, "needs_client_lib");
        ProtocolClient.Reply r = c.readReply();
        if (r.status() == Wire.HELLO_SEND_BINARY) {
            c.upload(program, 4096);
            r = c.readReply();
        }
        return r;
    }

    /** A LIBRARIES frame: u16 count, then per library u16 name_len, name, u64 size, u8[32] sha256. */
    private static byte[] libraries(String name, long size, byte[] sha) {
        byte[] n = name.getBytes(StandardCharsets.UTF_8);
        ByteBuffer b = ByteBuffer.allocate(2 + 2 + n.length + 8 + 32).order(ByteOrder.LITTLE_ENDIAN);
        b.putShort((short) 1).putShort((short) n.length).put(n).putLong(size).put(sha);
        return b.array();
    }

    private java.util.List<Path> uploadsLeft() throws java.io.IOException {
        Path uploads = state.resolve("cache").resolve(".uploads");
        if (!Files.isDirectory(uploads)) return java.util.List.of();
        try (var s = Files.list(uploads)) {
            return s.toList();
        }
    }

    @Test
    void theLibraryIsShippedOnceAndTheWorkerStartsWithIt() throws Exception {
        try (DaemonHarness d = daemon()) {
            try (ProtocolClient c = d.connect()) {
                ProtocolClient.Reply r = helloAndProgram(c);
                assertEquals(Wire.HELLO_NEED_LIBRARIES, r.status(), r.message());
                assertEquals(LIB, r.message());
                c.sendFrame(Wire.TYPE_LIBRARIES, libraries(LIB, library.length, ProtocolClient.sha256(library)));
                r = c.readReply();
                assertEquals(Wire.HELLO_SEND_LIBRARIES, r.status(), r.message());
                assertEquals(LIB, r.message());
                c.upload(library, 1000);
                r = c.readReply();
                assertEquals(Wire.HELLO_READY, r.status(), r.message());
                ProtocolClient.Frame manifest = c.readFrame();
                assertTrue(manifest != null && manifest.type() == Wire.TYPE_MANIFEST, "the worker started with the library");
            }
            // the same tenant's next start: the list only, no bytes
            try (ProtocolClient c = d.connect()) {
                ProtocolClient.Reply r = helloAndProgram(c);
                assertEquals(Wire.HELLO_NEED_LIBRARIES, r.status(), r.message());
                c.sendFrame(Wire.TYPE_LIBRARIES, libraries(LIB, library.length, ProtocolClient.sha256(library)));
                r = c.readReply();
                assertEquals(Wire.HELLO_READY, r.status(), r.message());
                assertEquals(Wire.TYPE_MANIFEST, c.readFrame().type());
            }
        }
    }

    @Test
    void withoutTheLibraryTheWorkerCouldNotStart() throws Exception {
        // what the exchange prevents: the program's loader cannot find the library on the appliance
        Process p = new ProcessBuilder(fixtures.needsClientLibrary.toString()).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor() != 0 && out.contains(LIB), out);
    }

    @Test
    void wrongAnswersAreRefusedAndNothingIsKept() throws Exception {
        try (DaemonHarness d = daemon()) {
            try (ProtocolClient c = d.connect()) { // another name than asked
                assertEquals(Wire.HELLO_NEED_LIBRARIES, helloAndProgram(c).status());
                c.sendFrame(Wire.TYPE_LIBRARIES, libraries("libother.so", library.length, ProtocolClient.sha256(library)));
                ProtocolClient.Reply r = c.readReply();
                assertEquals(Wire.HELLO_REFUSED, r.status());
                assertTrue(r.message().contains("not the libraries asked for"), r.message());
            }
            try (ProtocolClient c = d.connect()) { // the client has none either
                assertEquals(Wire.HELLO_NEED_LIBRARIES, helloAndProgram(c).status());
                c.sendFrame(Wire.TYPE_LIBRARIES, libraries(LIB, 0, new byte[32]));
                ProtocolClient.Reply r = c.readReply();
                assertEquals(Wire.HELLO_REFUSED, r.status());
                assertTrue(r.message().contains("neither this appliance nor the client has"), r.message());
            }
            try (ProtocolClient c = d.connect()) { // bytes that are not what the hash says
                assertEquals(Wire.HELLO_NEED_LIBRARIES, helloAndProgram(c).status());
                byte[] forged = library.clone();
                forged[forged.length - 1] ^= 1;
                c.sendFrame(Wire.TYPE_LIBRARIES, libraries(LIB, library.length, ProtocolClient.sha256(library)));
                assertEquals(Wire.HELLO_SEND_LIBRARIES, c.readReply().status());
                c.upload(forged, 4096);
                ProtocolClient.Reply r = c.readReply();
                assertEquals(Wire.HELLO_REFUSED, r.status());
                assertTrue(r.message().contains(LIB) && r.message().contains("does not match its SHA-256"), r.message());
            }
            // the forged bytes left no file behind (a client repeating this must not fill the state disk)
            DaemonHarness.await(() -> uploadsLeft().isEmpty()); // the test's timeout bounds the wait
            try (ProtocolClient c = d.connect()) { // more bytes than announced
                assertEquals(Wire.HELLO_NEED_LIBRARIES, helloAndProgram(c).status());
                c.sendFrame(Wire.TYPE_LIBRARIES, libraries(LIB, 10, ProtocolClient.sha256(library)));
                assertEquals(Wire.HELLO_SEND_LIBRARIES, c.readReply().status());
                c.upload(library, 4096);
                ProtocolClient.Reply r = c.readReply();
                assertEquals(Wire.HELLO_REFUSED, r.status());
                assertTrue(r.message().contains("more than the 10 bytes"), r.message());
            }
            try (ProtocolClient c = d.connect()) { // a malformed frame: 65 libraries
                assertEquals(Wire.HELLO_NEED_LIBRARIES, helloAndProgram(c).status());
                ByteArrayOutputStream b = new ByteArrayOutputStream();
                b.write(65);
                b.write(0);
                c.sendFrame(Wire.TYPE_LIBRARIES, b.toByteArray());
                ProtocolClient.ErrorFrame e = c.readError();
                assertTrue(e.message().contains("65 libraries"), e.message());
            }
            // the forged library was never kept: an honest client is asked for its bytes
            try (ProtocolClient c = d.connect()) {
                assertEquals(Wire.HELLO_NEED_LIBRARIES, helloAndProgram(c).status());
                c.sendFrame(Wire.TYPE_LIBRARIES, libraries(LIB, library.length, ProtocolClient.sha256(library)));
                assertEquals(Wire.HELLO_SEND_LIBRARIES, c.readReply().status());
            }
            assertEquals(200, d.get("/status").statusCode());
            DaemonHarness.await(() -> uploadsLeft().isEmpty());
        }
    }
}
