package io.vmcuda.tests;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * `vmcuda smi` (an INFO HELLO on the client port, PROTOCOL.md "Session setup"): a tenant sees the appliance's
 * GPUs and its own sessions, never another tenant's; a wrong token sees nothing. Real daemon, real sessions
 * (tests/pool/hold_session keeps its session until its stdin closes); on this GPU-less machine the GPU table
 * says why there is none.
 */
class ApplianceViewTest {

    @Test
    void aTenantSeesTheGpusAndOnlyItsOwnSessions() throws Exception {
        Path root = Path.of(System.getProperty("vmcuda.repo.root", "..")).toAbsolutePath().normalize();
        Path hold = Path.of(System.getProperty("vmcuda.test.pool", "target/pool")).toAbsolutePath().resolve("hold_session");
        assumeTrue(Files.isExecutable(hold), "no pool test programs (nvcc missing?): skipped");
        Path work = Path.of(System.getProperty("vmcuda.test.work", "target/e2e")).toAbsolutePath().resolve("view");
        Files.createDirectories(work);
        String otherToken = "other-tenant-token-" + Long.toHexString(System.nanoTime()) + "0123456789abcdef";
        try (DaemonProcess d = DaemonProcess.start(root, work,
                Map.of("tenant.other.token_sha256", DaemonProcess.sha256Hex(otherToken)), null, "daemon-view.log")) {
            Process mine = hold(root, d, hold, d.token, work.resolve("mine"));
            Process theirs = hold(root, d, hold, otherToken, work.resolve("theirs"));
            try {
                DaemonProcess.await("both sessions open", 60_000, () -> Files.readString(work.resolve("mine.out")).contains("first call")
                        && Files.readString(work.resolve("theirs.out")).contains("first call"));
                ProgramRunner.Result view = smi(root, d, d.token, work.resolve("smi-mine"));
                String ctx = "\n" + view.describe() + "--- daemon ---\n" + d.logText();
                assertEquals(0, view.exitCode(), ctx);
                assertTrue(view.stdout().contains("GPUs: none ("), "the GPU table says why there is none" + ctx);
                assertTrue(view.stdout().contains("Your sessions (tenant e2e): 1 active"), ctx);
                assertTrue(view.stdout().contains("hold_session"), ctx);
                assertFalse(view.stdout().contains("other"), "another tenant's session is shown" + ctx);

                ProgramRunner.Result theirView = smi(root, d, otherToken, work.resolve("smi-theirs"));
                assertTrue(theirView.stdout().contains("Your sessions (tenant other): 1 active"), theirView.describe());
                assertFalse(theirView.stdout().contains(" e2e "), theirView.describe());

                ProgramRunner.Result wrong = smi(root, d, "not-the-token-0123456789abcdef0123", work.resolve("smi-wrong"));
                assertEquals(1, wrong.exitCode(), wrong.describe());
                assertTrue(wrong.stderr().contains("refused"), wrong.describe());
                assertFalse(wrong.stdout().contains("hold_session"), wrong.describe());
            } finally {
                for (Process p : List.of(mine, theirs)) {
                    p.getOutputStream().close();
                    if (!p.waitFor(30, TimeUnit.SECONDS)) p.destroyForcibly();
                }
            }
        }
    }

    private static Process hold(Path root, DaemonProcess d, Path program, String token, Path prefix) throws Exception {
        ProcessBuilder pb = new ProcessBuilder(root.resolve("bin/vmcuda").toString(), "run", "--appliance",
                "127.0.0.1:" + d.port, "--", program.toString())
                .redirectOutput(Path.of(prefix + ".out").toFile()).redirectError(Path.of(prefix + ".err").toFile());
        pb.environment().put("VMCUDA_TOKEN", token);
        return pb.start();
    }

    private static ProgramRunner.Result smi(Path root, DaemonProcess d, String token, Path prefix) throws Exception {
        Map<String, String> env = new HashMap<>();
        env.put("VMCUDA_TOKEN", token);
        return ProgramRunner.run(List.of(root.resolve("bin/vmcuda").toString(), "smi", "--appliance", "127.0.0.1:" + d.port),
                env, prefix.getParent(), prefix);
    }
}
