package io.vmcuda.tests;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.netty.bootstrap.Bootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.channel.epoll.EpollDomainDatagramChannel;
import io.netty.channel.epoll.EpollIoHandler;
import io.netty.channel.unix.DomainDatagramPacket;
import io.netty.channel.unix.DomainSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The daemon as a service manager sees it, with the real bin/vmcudad, shim and workers: it says READY=1 on
 * $NOTIFY_SOCKET once it serves; SIGHUP reloads the tenants from its config file (a tenant added then is let
 * in, a running session goes on, a key that needs a restart is named); SIGTERM drains: STOPPING=1, no new
 * session, the running one finishes every call, then the daemon exits.
 */
@Timeout(180)
class DaemonLifecycleTest {
    private final Path root = Path.of(System.getProperty("vmcuda.repo.root", "..")).toAbsolutePath().normalize();
    private final Path iso = Path.of(System.getProperty("vmcuda.test.isolation", "target/isolation")).toAbsolutePath();
    private final Path work = Path.of(System.getProperty("vmcuda.test.work", "target/e2e")).toAbsolutePath()
            .resolveSibling("lifecycle-e2e");
    private final Path cudaLib = Path.of(System.getProperty("vmcuda.cuda.home", "/usr/local/cuda"), "lib64");

    private ProcessBuilder client(DaemonProcess d, String token, Path prefix, Path program, String... args) {
        List<String> cmd = new ArrayList<>(List.of(root.resolve("bin/vmcuda").toString(), "run", "--appliance",
                "127.0.0.1:" + d.port, "--", program.toString()));
        cmd.addAll(List.of(args));
        ProcessBuilder pb = new ProcessBuilder(cmd).directory(work.toFile())
                .redirectOutput(Path.of(prefix + ".out").toFile()).redirectError(Path.of(prefix + ".err").toFile());
        Map<String, String> env = pb.environment();
        env.remove("VMCUDA_APPLIANCE");
        env.put("VMCUDA_TOKEN", token);
        env.put("LD_LIBRARY_PATH", cudaLib + (System.getenv("LD_LIBRARY_PATH") == null ? "" : ":" + System.getenv("LD_LIBRARY_PATH")));
        return pb;
    }

    private static void signal(DaemonProcess d, String sig) throws Exception {
        assertEquals(0, new ProcessBuilder("kill", "-" + sig, Long.toString(d.process.pid())).start().waitFor());
    }

    private static String next(BlockingQueue<String> notes) throws InterruptedException {
        String m = notes.poll(30, TimeUnit.SECONDS);
        return m == null ? "(nothing within 30 s)" : m;
    }

    /**
     * A daemon that inherits an ignored SIGHUP (started under nohup) keeps ignoring it, so a reload would do nothing:
     * it says so at its start (a fresh-clone CI run started under nohup failed readyReloadAndDrain that way).
     */
    @Test
    void aDaemonStartedWithSighupIgnoredSaysItCannotReload() throws Exception {
        Path dir = Files.createDirectories(work.resolve("nohup"));
        Path conf = Files.writeString(dir.resolve("vmcudad.conf"), "");
        Path log = dir.resolve("daemon-nohup.log");
        Files.deleteIfExists(log);
        List<String> cmd = List.of("bash", "-c", "trap '' HUP; exec \"$@\"", "under-nohup", root.resolve("bin/vmcudad").toString(),
                "--listen", "127.0.0.1:" + DaemonProcess.freePort(), "--admin", "127.0.0.1:" + DaemonProcess.freePort(),
                "--state-dir", Files.createDirectories(dir.resolve("state")).toString(), "--config", conf.toString());
        Process daemon = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log.toFile()).start();
        try {
            DaemonProcess.await("the daemon listening", 90_000, () -> Files.readString(log).contains("listening on"));
            assertTrue(Files.readString(log).contains("SIGHUP is ignored in this process (started under nohup?)"),
                    Files.readString(log));
        } finally {
            daemon.destroy();
            if (!daemon.waitFor(30, TimeUnit.SECONDS)) daemon.destroyForcibly();
        }
    }

    @Test
    void readyReloadAndDrain() throws Exception {
        Path runner = iso.resolve("long_runner");
        assumeTrue(Files.isExecutable(runner), "no isolation programs (nvcc missing?): skipped");
        Files.createDirectories(work);
        Path socket = work.resolve("notify-" + ProcessHandle.current().pid() + ".sock");
        Files.deleteIfExists(socket);
        BlockingQueue<String> notes = new LinkedBlockingQueue<>();
        EventLoopGroup group = new MultiThreadIoEventLoopGroup(1, EpollIoHandler.newFactory());
        Channel receiver = new Bootstrap().group(group).channel(EpollDomainDatagramChannel.class)
                .handler(new SimpleChannelInboundHandler<DomainDatagramPacket>() {
                    @Override
                    protected void channelRead0(ChannelHandlerContext ctx, DomainDatagramPacket p) {
                        notes.add(p.content().toString(StandardCharsets.UTF_8));
                    }
                }).bind(new DomainSocketAddress(socket.toString())).sync().channel();
        Map<String, String> env = new HashMap<>(Map.of("NOTIFY_SOCKET", socket.toString()));
        try (DaemonProcess d = DaemonProcess.start(root, work, Map.of("session.drain_s", "60"), null, "daemon-lifecycle.log",
                null, env)) {
            String ready = next(notes);
            assertTrue(ready.startsWith("READY=1\nSTATUS=serving on 127.0.0.1:"), ready);

            // a session that runs through the reload and the drain: 40 calls, 250 ms apart
            Process running = client(d, d.token, work.resolve("lifecycle-runner"), runner, "40", "250").start();
            DaemonProcess.await("the session's first calls", 30_000,
                    () -> Files.readString(work.resolve("lifecycle-runner.out")).contains("call 2"));

            // reload: a second tenant, and a key that only a restart applies
            String second = "second-tenant-token-0123456789abcdef";
            Path conf = d.stateDir.resolveSibling(d.stateDir.getFileName() + ".conf");
            Files.writeString(conf, "tenant.second.token_sha256 = " + DaemonProcess.sha256Hex(second) + "\nworker.block_size = 2097152\n",
                    StandardOpenOption.APPEND);
            assertTrue(!d.logText().contains("SIGHUP is ignored"), "this test's daemon cannot reload: " + d.logText());
            signal(d, "HUP");
            assertTrue(next(notes).startsWith("RELOADING=1"));
            assertTrue(next(notes).startsWith("READY=1"));
            DaemonProcess.await("the reload logged", 10_000, () -> d.logText().contains("configuration reloaded"));
            assertTrue(d.logText().contains("changed: [tenant.second.token_sha256, worker.block_size]; these take effect at "
                    + "the next start: [worker.block_size]"), d.logText());
            Process bySecond = client(d, second, work.resolve("lifecycle-second"), runner, "2", "10").start();
            assertEquals(true, bySecond.waitFor(60, TimeUnit.SECONDS));
            String secondErr = Files.readString(work.resolve("lifecycle-second.err"));
            assertTrue(!secondErr.contains("cannot use appliance"), secondErr);
            DaemonProcess.await("the second tenant's session recorded", 10_000,
                    () -> Files.exists(d.stateDir.resolve("sessions.jsonl"))
                            && Files.readString(d.stateDir.resolve("sessions.jsonl")).contains("\"tenant\":\"second\""));

            // a file that does not load is refused; the running configuration stays
            Files.writeString(conf, "worker.block_size = lots\n", StandardOpenOption.APPEND);
            signal(d, "HUP");
            DaemonProcess.await("the bad reload refused", 10_000, () -> d.logText().contains("refused, the running configuration stays"));

            // drain: STOPPING=1, no new session, the running one completes
            d.process.destroy();
            String stopping = "";
            while (!stopping.startsWith("STOPPING=1")) stopping = next(notes);
            Process late = client(d, d.token, work.resolve("lifecycle-late"), runner, "2", "10").start();
            assertTrue(late.waitFor(60, TimeUnit.SECONDS));
            assertTrue(Files.readString(work.resolve("lifecycle-late.err")).contains("appliance is stopping"),
                    Files.readString(work.resolve("lifecycle-late.err")));
            assertTrue(running.waitFor(60, TimeUnit.SECONDS));
            // every call answered as the first one was (on a GPU-less machine an error, the same each time): the
            // session was not cut, which would turn the later answers into cudaErrorDevicesUnavailable
            List<String> calls = Files.readAllLines(work.resolve("lifecycle-runner.out")).stream()
                    .filter(l -> l.startsWith("call ")).map(l -> l.substring(l.indexOf(':') + 1)).toList();
            String ctx = calls + Files.readString(work.resolve("lifecycle-runner.err"));
            assertEquals(40, calls.size(), ctx);
            assertTrue(calls.stream().allMatch(c -> c.equals(calls.get(0))) && !calls.get(0).contains("DevicesUnavailable"), ctx);
            assertTrue(d.process.waitFor(30, TimeUnit.SECONDS), "the daemon exits once its session ended");
            assertTrue(d.logText().contains("may finish within 60 s (session.drain_s)"), d.logText());
        } finally {
            receiver.close();
            group.shutdownGracefully(0, 1, TimeUnit.SECONDS);
        }
    }
}
