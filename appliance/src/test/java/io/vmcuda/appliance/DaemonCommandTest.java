package io.vmcuda.appliance;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.vmcuda.appliance.auth.Authenticator;
import java.io.ByteArrayInputStream;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/** vmcudad's command line as an operator meets it: values parsed, messages, exit statuses. */
class DaemonCommandTest {
    /** A usage error: exit 2, nothing on stdout, the reason on one line and the hint on the next. */
    private static void assertUsageError(String reason, String... args) {
        VmcudadRun r = VmcudadRun.of(args);
        assertEquals(2, r.status(), r.err());
        assertEquals("", r.out());
        String name = reason.substring(0, reason.indexOf(':'));
        assertEquals(reason + "\nTry '" + name + " --help' for more information.\n", r.err());
    }

    @Test
    void optionsParse() {
        DaemonOptions o = DaemonCommand.parse("--listen", "0.0.0.0:9000", "--admin=:9001",
                "--state-dir", "/var/lib/vmcuda", "--worker-lib-dir", "/opt/n").options();
        assertEquals(9000, o.listen().getPort());
        assertEquals(9001, o.admin().getPort());
        assertTrue(o.admin().getAddress().isAnyLocalAddress(), ":PORT is every interface");
        assertEquals(Path.of("/var/lib/vmcuda"), o.stateDir());
        assertEquals(Path.of("/opt/n"), o.workerLibDir());
        assertFalse(o.insecure());
        assertNull(o.configFile());

        DaemonOptions more = DaemonCommand.parse("--config=/etc/vmcuda/vmcudad.properties", "--insecure",
                "--etcd", "http://10.0.0.1:2379,http://10.0.0.2:2379", "--listen", "[::1]:7070").options();
        assertEquals(Path.of("/etc/vmcuda/vmcudad.properties"), more.configFile());
        assertTrue(more.insecure());
        assertEquals("http://10.0.0.1:2379,http://10.0.0.2:2379", more.etcd());
        assertEquals("0:0:0:0:0:0:0:1", more.listen().getHostString());
    }

    @Test
    void noOptionsAreTheDefaultsAndTheLastOfARepeatedOptionWins() {
        assertEquals(DaemonOptions.defaults(), DaemonCommand.parse().options());
        assertEquals(7002, DaemonCommand.parse("--listen", ":7001", "--listen=:7002").options().listen().getPort());
    }

    @Test
    void anUnknownOptionIsOneLineNotTheUsage() {
        assertUsageError("vmcudad: unknown option --bogus", "--bogus");
        assertUsageError("vmcudad: unknown option --bogus", "--bogus=1");
        assertUsageError("vmcudad: unknown option --frobnicate", "--frobnicate", "1");
        assertUsageError("vmcudad: unknown option --bogus", "--listen", ":1", "--bogus");
        assertUsageError("vmcudad: unexpected argument stray", "stray");
    }

    @Test
    void aMissingValueNamesItsOption() {
        assertUsageError("vmcudad: missing value for --listen", "--listen");
        assertUsageError("vmcudad: missing value for --listen", "--listen", "--admin", ":1");
        assertUsageError("vmcudad: missing value for --log-level", "--state-dir", "x", "--log-level");
    }

    @Test
    void badValuesSayWhatIsWrongWithThem() {
        assertUsageError("vmcudad: --listen: 'nope' is not HOST:PORT", "--listen", "nope");
        assertUsageError("vmcudad: --admin: port out of range in ':99999'", "--admin=:99999");
        assertUsageError("vmcudad: --listen: 'host:x' has no numeric port", "--listen", "host:x");
        assertUsageError("vmcudad: --log-level: log level 'verbose' is not one of error, warn, info, debug",
                "--log-level", "verbose");
    }

    @Test
    void helpDescribesEveryOptionAndWhereConfigMdIs() {
        VmcudadRun r = VmcudadRun.of("--help");
        assertEquals(0, r.status());
        assertEquals("", r.err());
        for (String s : new String[] {"--listen=HOST:PORT", "client port (default 127.0.0.1:7070)", "--admin=HOST:PORT",
                "--state-dir=DIR", "--config=FILE", "--worker-lib-dir=DIR", "--insecure", "--log-level=LEVEL",
                "--etcd=http://HOST:2379[,...]", "--hash-token[=TOKEN]", "--new-token", "--version",
                "vmcudad cache seed [--state-dir DIR] [--config FILE] FILE...", "after\nworker.stop_grace_s.",
                "/usr/share/doc/vmcuda-appliance/CONFIG.md (package)", "appliance/CONFIG.md (source)"}) {
            assertTrue(r.out().contains(s), s + " in:\n" + r.out());
        }
        assertEquals(r, VmcudadRun.of("-h"));
        assertTrue(r.out().lines().allMatch(l -> l.length() <= 80), "fits a terminal:\n" + r.out());
    }

    @Test
    void versionIsTheBuilds() {
        assertEquals(new VmcudadRun(0, "vmcudad " + Version.get() + "\n", ""), VmcudadRun.of("--version"));
    }

    @Test
    void hashTokenPrintsTheConfigValueAndRefusesWeakTokens() {
        String token = Authenticator.generateToken();
        String line = Authenticator.hashToken(token) + "\n";
        assertEquals(new VmcudadRun(0, line, ""), VmcudadRun.of("--hash-token", token));
        VmcudadRun weak = VmcudadRun.of("--hash-token", "secret");
        assertEquals(2, weak.status());
        assertTrue(weak.err().startsWith("vmcudad: --hash-token: refusing a weak token ("), weak.err());
        InputStream stdin = System.in;
        try {
            // the option alone: the token is the line on stdin (and not in the shell's history)
            System.setIn(new ByteArrayInputStream((" " + token + " \n").getBytes(StandardCharsets.UTF_8)));
            assertEquals(new VmcudadRun(0, line, ""), VmcudadRun.of("--hash-token"));
            System.setIn(new ByteArrayInputStream(new byte[0]));
            String none = "vmcudad: --hash-token: no token given (argument or one line on stdin)\n";
            assertEquals(new VmcudadRun(2, "", none), VmcudadRun.of("--hash-token"));
        } finally {
            System.setIn(stdin);
        }
    }

    @Test
    void newTokenPrintsATokenAndItsConfigLines() {
        VmcudadRun r = VmcudadRun.of("--new-token");
        assertEquals(0, r.status(), r.err());
        Matcher token = Pattern.compile("(?m)^  ([0-9a-f]{64})$").matcher(r.out());
        assertTrue(token.find(), r.out());
        String sha = Authenticator.hashToken(token.group(1));
        assertTrue(r.out().contains("  tenant.NAME.token_sha256 = " + sha + "\n"), r.out());
        assertTrue(r.out().contains("  admin.token_sha256 = " + sha + "\n"), r.out());
    }

    @Test
    void cacheSeedArgumentErrors() {
        assertUsageError("vmcudad cache seed: no FILE given", "cache", "seed");
        assertUsageError("vmcudad cache seed: no FILE given", "cache", "seed", "--state-dir", "/tmp/x");
        assertUsageError("vmcudad cache seed: unknown option --bogus", "cache", "seed", "--bogus", "lib.so");
        assertUsageError("vmcudad cache seed: missing value for --config", "cache", "seed", "lib.so", "--config");
        assertUsageError("vmcudad cache: missing required subcommand", "cache");
        VmcudadRun help = VmcudadRun.of("cache", "seed", "--help");
        assertEquals(0, help.status());
        assertTrue(help.out().startsWith("Usage: vmcudad cache seed [-h] [--state-dir=DIR] [--config=FILE] FILE..."),
                help.out());
    }
}
