package io.vmcuda.appliance;

import io.vmcuda.appliance.auth.Authenticator;
import io.vmcuda.scheduler.SystemGpuInventory;
import java.io.PrintWriter;
import java.util.concurrent.CountDownLatch;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * vmcudad, the appliance daemon, in the foreground; logs go to stderr.
 * SIGTERM/SIGINT run {@link Daemon#close()}: no new sessions, the running ones may finish for session.drain_s,
 * then they end (their workers are terminated so none is left holding GPU memory). SIGHUP reloads the tenants
 * from the config file ({@link Daemon#reload}). {@link DaemonCommand} reads the command line; this class does
 * what it asks for: run the daemon, or one of the token tools.
 */
public final class Vmcudad {
    private Vmcudad() {}

    public static void main(String[] args) {
        // must happen before anything touches java.util.logging
        System.setProperty("java.util.logging.manager", ShutdownSafeLogManager.class.getName());
        int status = DaemonCommand.commandLine().execute(args);
        // 0 after a daemon's run: its shutdown hook closed it and the JVM is already exiting (exit would block)
        if (status != 0) System.exit(status);
    }

    /** --hash-token: the tenant.NAME.token_sha256 value of a token (null: none given); returns the exit status. */
    static int hashToken(String token, PrintWriter out, PrintWriter err) {
        if (token == null || token.strip().isEmpty()) {
            err.println("vmcudad: --hash-token: no token given (argument or one line on stdin)");
            return 2;
        }
        String weak = Authenticator.weakness(token.strip());
        if (weak != null) {
            err.println("vmcudad: --hash-token: refusing a weak token (" + weak + "); vmcudad --new-token "
                    + "makes a 256-bit one");
            return 2;
        }
        out.println(Authenticator.hashToken(token.strip()));
        return 0;
    }

    /** --new-token: a new random token and the config lines that make it a tenant's or the operator's. */
    static int newToken(PrintWriter out) {
        String token = Authenticator.generateToken();
        out.println("token (give it to the tenant's clients: VMCUDA_TOKEN or 'token =' in client.conf):");
        out.println("  " + token);
        out.println("daemon config line (replace NAME):");
        out.println("  tenant.NAME.token_sha256 = " + Authenticator.hashToken(token));
        out.println("or, to make it the operator's token for the admin port (vmcuda status):");
        out.println("  admin.token_sha256 = " + Authenticator.hashToken(token));
        return 0;
    }

    /** Runs the daemon until SIGTERM/SIGINT; returns the exit status when it cannot start. */
    static int runDaemon(DaemonOptions options, Level levelOption) throws java.io.IOException, InterruptedException {
        OneLineLogFormatter.install();
        Logger log = Logger.getLogger(Vmcudad.class.getName());
        ApplianceConfig config;
        try {
            config = ApplianceConfig.load(options.configFile());
        } catch (IllegalArgumentException | java.io.IOException e) {
            // one line: a service restarting on a bad config repeats it in the journal. The JDK's file errors say
            // only the path ("NoSuchFileException: /x"): name what went wrong
            String why = e instanceof java.nio.file.NoSuchFileException ? "cannot read the configuration: no such file"
                    : e instanceof java.nio.file.AccessDeniedException ? "cannot read the configuration: permission denied"
                    : e.getMessage();
            System.err.println("vmcudad: " + (options.configFile() == null ? "" : options.configFile() + ": ") + why);
            return 2;
        }
        OneLineLogFormatter.setLevel(levelOption != null ? levelOption : config.logLevel());
        if (options.configFile() != null) log.info("configuration read from " + ApplianceConfig.files(options.configFile()));
        // SIGHUP (systemctl reload): tenants and their limits again from the config file, sessions untouched. Its
        // handler is in place before the daemon says READY=1: the JVM's default action would stop the daemon.
        boolean logLevelFromFile = levelOption == null;
        java.util.concurrent.atomic.AtomicReference<Daemon> running = new java.util.concurrent.atomic.AtomicReference<>();
        sun.misc.SignalHandler before = sun.misc.Signal.handle(new sun.misc.Signal("HUP"), sig -> {
            Daemon d = running.get();
            if (d != null) d.reload(options.configFile(), logLevelFromFile);
            else log.warning("reload asked for while the daemon is starting: ignored");
        });
        // A SIGHUP ignored when the JVM started (nohup) stays ignored, handler or not: say so, or a reload would
        // silently do nothing
        if (before == sun.misc.SignalHandler.SIG_IGN && options.configFile() != null) {
            log.warning("SIGHUP is ignored in this process (started under nohup?): a reload (kill -HUP, systemctl "
                    + "reload) will not read the configuration again; restart the daemon to apply a changed file");
        }
        Daemon daemon;
        try {
            daemon = Daemon.start(options, config, SystemGpuInventory.detect());
        } catch (Exception e) {
            log.severe("cannot start: " + e);
            return 1;
        }
        running.set(daemon);
        CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            daemon.close();
            stopped.countDown();
        }, "vmcudad-shutdown"));
        stopped.await();
        return 0;
    }
}

