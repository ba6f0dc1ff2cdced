package io.vmcuda.appliance.admin;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.epoll.EpollIoHandler;
import io.vmcuda.appliance.session.DaemonMetrics;
import io.vmcuda.scheduler.GpuInventory;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Connections to the admin port are bounded before any token is checked: one that sends no complete request in time is
 * closed, and past the cap a new one is closed at once, so that idle connections cannot take the daemon's descriptors.
 */
@Timeout(60)
class AdminServerTest {
    private final EventLoopGroup group = new MultiThreadIoEventLoopGroup(1, EpollIoHandler.newFactory());
    private final List<Socket> sockets = new ArrayList<>();

    @AfterEach
    void close() throws Exception {
        for (Socket s : sockets) s.close();
        group.shutdownGracefully(0, 0, java.util.concurrent.TimeUnit.SECONDS).sync();
    }

    private AdminServer server(Duration idle, int cap) throws InterruptedException {
        return server(idle, cap, cap);
    }

    private AdminServer server(Duration idle, int cap, int perAddress) throws InterruptedException {
        GpuInventory noGpus = new GpuInventory() {
            @Override
            public List<io.vmcuda.scheduler.GpuInfo> gpus() {
                return List.of();
            }

            @Override
            public String unavailableReason() {
                return "no GPU (test)";
            }

            @Override
            public java.util.Optional<io.vmcuda.scheduler.GpuUsage> usage(String uuid) {
                return java.util.Optional.empty();
            }
        };
        StatusSource src = new StatusSource("test", noGpus, null, new DaemonMetrics(), List::of);
        return new AdminServer(new InetSocketAddress("127.0.0.1", 0), group, src, AdminAccess.open(), idle, cap, perAddress);
    }

    private Socket connect(AdminServer a) throws IOException {
        return connectFrom(a, "127.0.0.1");
    }

    /** A connection from another loopback address (Linux routes all of 127/8 to lo). */
    private Socket connectFrom(AdminServer a, String source) throws IOException {
        Socket s = new Socket(java.net.InetAddress.getByName("127.0.0.1"), a.localAddress().getPort(),
                java.net.InetAddress.getByName(source), 0);
        sockets.add(s);
        return s;
    }

    /** Everything the server sends until it closes the connection (the test's timeout bounds the wait). */
    private static String readToClose(Socket s) throws IOException {
        return new String(s.getInputStream().readAllBytes(), StandardCharsets.US_ASCII);
    }

    private static String healthz(Socket s, String connection) throws IOException {
        s.getOutputStream().write(("GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: " + connection + "\r\n\r\n")
                .getBytes(StandardCharsets.US_ASCII));
        InputStream in = s.getInputStream();
        StringBuilder b = new StringBuilder();
        while (!b.toString().endsWith("ok\n")) {
            int c = in.read();
            if (c < 0) throw new IOException("closed after '" + b + "'");
            b.append((char) c);
        }
        return b.toString();
    }

    @Test
    void aConnectionWithoutACompleteRequestIsClosed() throws Exception {
        try (AdminServer a = server(Duration.ofMillis(300), 8)) {
            Socket silent = connect(a);
            Socket partial = connect(a);
            partial.getOutputStream().write("GET /status HTTP/1.1\r\n".getBytes(StandardCharsets.US_ASCII)); // never ends
            Socket keptAlive = connect(a);
            assertTrue(healthz(keptAlive, "keep-alive").startsWith("HTTP/1.1 200"));
            assertEquals("", readToClose(silent));
            assertEquals("", readToClose(partial));
            assertEquals("", readToClose(keptAlive), "an idle keep-alive connection ends after its answer");
        }
    }

    @Test
    void pastTheCapANewConnectionIsClosedAndTheOthersServed() throws Exception {
        try (AdminServer a = server(Duration.ofHours(1), 3)) {
            List<Socket> held = new ArrayList<>();
            for (int i = 0; i < 3; i++) {
                held.add(connect(a));
                assertTrue(healthz(held.get(i), "keep-alive").startsWith("HTTP/1.1 200"), "connection " + i + " is served");
            }
            assertEquals("", readToClose(connect(a)), "the fourth is closed without an answer");
            assertTrue(healthz(held.get(0), "keep-alive").startsWith("HTTP/1.1 200"), "the open ones are still served");

            held.get(1).close(); // a place is free again once the server has seen it close
            while (true) {
                Socket s = connect(a);
                try {
                    assertTrue(healthz(s, "close").startsWith("HTTP/1.1 200"));
                    break;
                } catch (IOException closedAtTheCap) {
                    Thread.sleep(20);
                }
            }
        }
    }

    @Test
    void oneAddressHoldsAtMostItsShareAndOthersAreStillServed() throws Exception {
        try (AdminServer a = server(Duration.ofHours(1), 10, 2)) {
            for (int i = 0; i < 2; i++)
                assertTrue(healthz(connectFrom(a, "127.0.0.2"), "keep-alive").startsWith("HTTP/1.1 200"), "127.0.0.2's " + i);
            assertEquals("", readToClose(connectFrom(a, "127.0.0.2")), "a third from 127.0.0.2 is closed without an answer");
            assertTrue(healthz(connectFrom(a, "127.0.0.3"), "keep-alive").startsWith("HTTP/1.1 200"),
                    "another address is served while 127.0.0.2 holds its share");
        }
    }
}
