package io.vmcuda.appliance;

import io.vmcuda.scheduler.SystemGpuInventory;
import java.util.concurrent.CountDownLatch;
import java.util.logging.Logger;

/**
 * vmcudad, the appliance daemon, in the foreground; logs go to stderr.
 * SIGTERM/SIGINT run {@link Daemon#close()}: no new sessions, the running ones may finish for session.drain_s,
 * then they end (their workers are terminated so none is left holding GPU memory). SIGHUP reloads the tenants
 * from the config file ({@link Daemon#reload}).
 */
public final class Vmcudad {
    private Vmcudad() {}

    public static void main(String[] args) throws Exception {
        if (args.length >= 1 && args[0].equals("--hash-token")) {
            String token;
            if (args.length >= 2) {
                token = args[1];
            } else {
                java.io.BufferedReader in = new java.io.BufferedReader(
                        new java.io.InputStreamReader(System.in, java.nio.charset.StandardCharsets.UTF_8));
                token = in.readLine();
            }
            if (token == null || token.strip().isEmpty()) {
                System.err.println("vmcudad: --hash-token: no token given (argument or one line on stdin)");
                System.exit(2);
            }
            String weak = io.vmcuda.appliance.auth.Authenticator.weakness(token.strip());
            if (weak != null) {
                System.err.println("vmcudad: --hash-token: refusing a weak token (" + weak + "); vmcudad --new-token "
                        + "makes a 256-bit one");
                System.exit(2);
            }
            System.out.println(io.vmcuda.appliance.auth.Authenticator.hashToken(token.strip()));
            return;
        }
        if (args.length >= 2 && args[0].equals("cache") && args[1].equals("seed")) {
            System.exit(CacheSeed.run(args, System.out, System.err));
            return;
        }
        if (args.length >= 1 && args[0].equals("--new-token")) {
            String token = io.vmcuda.appliance.auth.Authenticator.generateToken();
            System.out.println("token (give it to the tenant's clients: VMCUDA_TOKEN or 'token =' in client.conf):");
            System.out.println("  " + token);
            System.out.println("daemon config line (replace NAME):");
            System.out.println("  tenant.NAME.token_sha256 = " + io.vmcuda.appliance.auth.Authenticator.hashToken(token));
            System.out.println("or, to make it the operator's token for the admin port (vmcuda status):");
            System.out.println("  admin.token_sha256 = " + io.vmcuda.appliance.auth.Authenticator.hashToken(token));
            return;
        }
        for (String a : args) {
            if (a.equals("--version")) {
                System.out.println("vmcudad " + Version.get());
                return;
            }
            if (a.equals("--help") || a.equals("-h")) {
                System.out.println(DaemonOptions.USAGE);
                return;
            }
        }
        // must happen before anything touches java.util.logging
        System.setProperty("java.util.logging.manager", ShutdownSafeLogManager.class.getName());
        OneLineLogFormatter.install();
        Logger log = Logger.getLogger(Vmcudad.class.getName());
        DaemonOptions options;
        ApplianceConfig config;
        java.util.logging.Level levelOption;
        try {
            String[] rest = withoutLogLevel(args);
            levelOption = logLevelOption(args);
            options = DaemonOptions.parse(rest);
        } catch (IllegalArgumentException e) {
            System.err.println("vmcudad: " + e.getMessage());
            System.err.println(DaemonOptions.USAGE);
            System.exit(2);
            return;
        }
        try {
            config = ApplianceConfig.load(options.configFile());
        } catch (IllegalArgumentException | java.io.IOException e) {
            // one line: a service restarting on a bad config repeats it in the journal. The JDK's file errors say
            // only the path ("NoSuchFileException: /x"): name what went wrong
            String why = e instanceof java.nio.file.NoSuchFileException ? "cannot read the configuration: no such file"
                    : e instanceof java.nio.file.AccessDeniedException ? "cannot read the configuration: permission denied"
                    : e.getMessage();
            System.err.println("vmcudad: " + (options.configFile() == null ? "" : options.configFile() + ": ") + why);
            System.exit(2);
            return;
        }
        OneLineLogFormatter.setLevel(levelOption != null ? levelOption : config.logLevel());
        if (options.configFile() != null) log.info("configuration read from " + ApplianceConfig.files(options.configFile()));
        // SIGHUP (systemctl reload): tenants and their limits again from the config file, sessions untouched. Its
        // handler is in place before the daemon says READY=1: the JVM's default action would stop the daemon.
        boolean logLevelFromFile = levelOption == null;
        java.util.concurrent.atomic.AtomicReference<Daemon> running = new java.util.concurrent.atomic.AtomicReference<>();
        sun.misc.Signal.handle(new sun.misc.Signal("HUP"), sig -> {
            Daemon d = running.get();
            if (d != null) d.reload(options.configFile(), logLevelFromFile);
            else log.warning("reload asked for while the daemon is starting: ignored");
        });
        Daemon daemon;
        try {
            daemon = Daemon.start(options, config, SystemGpuInventory.detect());
        } catch (Exception e) {
            log.severe("cannot start: " + e);
            System.exit(1);
            return;
        }
        running.set(daemon);
        CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            daemon.close();
            stopped.countDown();
        }, "vmcudad-shutdown"));
        stopped.await();
    }

    /** --log-level LEVEL (or --log-level=LEVEL): the level it names, null when not given. */
    static java.util.logging.Level logLevelOption(String[] args) {
        java.util.logging.Level level = null;
        for (int i = 0; i < args.length; i++) {
            if (args[i].startsWith("--log-level=")) level = LogLevel.parse(args[i].substring("--log-level=".length()));
            else if (args[i].equals("--log-level")) {
                if (i + 1 >= args.length) throw new IllegalArgumentException("missing value for --log-level");
                level = LogLevel.parse(args[++i]);
            }
        }
        return level;
    }

    /** The arguments without --log-level and its value (DaemonOptions knows the rest). */
    static String[] withoutLogLevel(String[] args) {
        java.util.List<String> rest = new java.util.ArrayList<>();
        for (int i = 0; i < args.length; i++) {
            if (args[i].startsWith("--log-level=")) continue;
            if (args[i].equals("--log-level")) {
                i++;
                continue;
            }
            rest.add(args[i]);
        }
        return rest.toArray(new String[0]);
    }
}
