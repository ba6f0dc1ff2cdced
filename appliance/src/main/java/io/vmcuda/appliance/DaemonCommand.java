package io.vmcuda.appliance;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.concurrent.Callable;
import java.util.logging.Level;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.ExitCode;
import picocli.CommandLine.MissingParameterException;
import picocli.CommandLine.Model.ArgSpec;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Model.OptionSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.ScopeType;
import picocli.CommandLine.Spec;
import picocli.CommandLine.UnmatchedArgumentException;

/**
 * vmcudad's command line: the daemon's options ({@link DaemonOptions}), the token tools, {@code cache seed}
 * ({@link CacheSeed}), --help and --version. What each form does is in {@link Vmcudad}.
 */
@Command(name = "vmcudad", sortOptions = false, versionProvider = DaemonCommand.VersionProvider.class,
        subcommands = DaemonCommand.Cache.class,
        // written out: picocli's own synopsis runs all options together, not the three forms of the command
        synopsisHeading = "",
        customSynopsis = {
            "Usage: vmcudad [--listen HOST:PORT] [--admin HOST:PORT] [--state-dir DIR]",
            "               [--config FILE] [--worker-lib-dir DIR] [--insecure]",
            "               [--log-level LEVEL] [--etcd http://HOST:2379[,...]]",
            "       vmcudad --hash-token [TOKEN] | --new-token | --version | --help",
            "       vmcudad cache seed [--state-dir DIR] [--config FILE] FILE...",
            ""},
        description = "The vmcuda appliance daemon, in the foreground; logs go to stderr.",
        // lines picocli need not wrap: it would break worker.stop_grace_s at its dot
        footer = {
            "Running sessions end when the daemon stops: on SIGTERM it stops accepting,",
            "sends its workers SIGTERM, and SIGKILL to those still alive after",
            "worker.stop_grace_s.",
            "CONFIG.md (every key): /usr/share/doc/vmcuda-appliance/CONFIG.md (package),",
            "appliance/CONFIG.md (source)."})
final class DaemonCommand implements Callable<Integer> {
    private static final DaemonOptions DEFAULTS = DaemonOptions.defaults();

    @Option(names = "--listen", paramLabel = "HOST:PORT", description = "client port (default 127.0.0.1:7070)")
    InetSocketAddress listen = DEFAULTS.listen();

    @Option(names = "--admin", paramLabel = "HOST:PORT",
            description = "HTTP status/metrics port (default 127.0.0.1:7071)")
    InetSocketAddress admin = DEFAULTS.admin();

    @Option(names = "--state-dir", paramLabel = "DIR",
            description = "binary cache, session logs, worker socket (default ./vmcuda-state)")
    Path stateDir = DEFAULTS.stateDir();

    @Option(names = "--config", paramLabel = "FILE", description = "properties file; every key in CONFIG.md")
    Path configFile;

    @Option(names = "--worker-lib-dir", paramLabel = "DIR", description = "directory of libvmcuda-worker.so "
            + "(default: $VMCUDA_WORKER_LIB_DIR, worker.lib_dir, appliance/target/native in a checkout, "
            + "<bundle>/native)")
    Path workerLibDir;

    @Option(names = "--insecure", description = "allow a non-loopback --listen without tenant tokens (anyone who can "
            + "reach the port may run code on the GPUs)")
    boolean insecure;

    // null: the config file's log.level decides, also at a reload
    @Option(names = "--log-level", paramLabel = "LEVEL",
            description = "error, warn, info (default) or debug; the properties key log.level likewise")
    Level logLevel;

    @Option(names = "--etcd", paramLabel = "http://HOST:2379[,...]", description = "join the pool of appliances on "
            + "this etcd (the properties key cluster.etcd likewise; CONFIG.md \"Pool of appliances\")")
    String etcd;

    // the option alone gives "-": the token is the line on stdin, where a shell's history does not keep it
    @Option(names = "--hash-token", arity = "0..1", paramLabel = "TOKEN", fallbackValue = "-",
            description = "print the tenant.NAME.token_sha256 value of TOKEN (or of the line on stdin)")
    String hashToken;

    @Option(names = "--new-token", description = "print a new random token and its config lines (tenant, operator)")
    boolean newToken;

    @Option(names = "--version", versionHelp = true, description = "print the version")
    boolean version;

    // inherited: 'vmcudad cache seed --help' works too
    @Option(names = {"-h", "--help"}, usageHelp = true, scope = ScopeType.INHERIT, description = "print this help")
    boolean help;

    @Spec
    CommandSpec spec;

    DaemonOptions options() {
        return new DaemonOptions(listen, admin, stateDir, configFile, workerLibDir, insecure, etcd);
    }

    @Override
    public Integer call() throws Exception {
        CommandLine cl = spec.commandLine();
        if (hashToken != null) {
            BufferedReader stdin = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
            return Vmcudad.hashToken(hashToken.equals("-") ? stdin.readLine() : hashToken, cl.getOut(), cl.getErr());
        }
        if (newToken) return Vmcudad.newToken(cl.getOut());
        return Vmcudad.runDaemon(options(), logLevel);
    }

    /** The whole command line, ready for {@code execute}; its output goes to System.out/err unless set. */
    static CommandLine commandLine() {
        return configure(new CommandLine(new DaemonCommand()));
    }

    /** Parses the daemon's options without running anything; ParameterException as execute would report it. */
    static DaemonCommand parse(String... args) {
        DaemonCommand c = new DaemonCommand();
        configure(new CommandLine(c)).parseArgs(args);
        return c;
    }

    private static CommandLine configure(CommandLine cl) {
        // the converters' IllegalArgumentException says what is wrong with the value (reason() adds the option)
        cl.registerConverter(InetSocketAddress.class, DaemonOptions::hostPort);
        cl.registerConverter(Level.class, LogLevel::parse);
        cl.setOverwrittenOptionsAllowed(true); // the last of a repeated option wins, as before picocli
        cl.setExpandAtFiles(false); // '@x' is a file name (cache seed), not picocli's file of arguments
        cl.setParameterExceptionHandler((e, args) -> {
            // one line and a hint, not the usage: a service restarting on a bad option repeats it in the journal
            String name = e.getCommandLine().getCommandSpec().qualifiedName();
            e.getCommandLine().getErr().println(name + ": " + reason(e));
            e.getCommandLine().getErr().println("Try '" + name + " --help' for more information.");
            return ExitCode.USAGE;
        });
        return cl;
    }

    /** The error in the words the hand-written parser used: "unknown option --bogus", "missing value for --listen". */
    static String reason(ParameterException e) {
        if (e instanceof UnmatchedArgumentException u && !u.getUnmatched().isEmpty()) {
            String arg = u.getUnmatched().get(0);
            if (!arg.startsWith("-")) return "unexpected argument " + arg;
            int eq = arg.indexOf('=');
            return "unknown option " + (arg.startsWith("--") && eq > 0 ? arg.substring(0, eq) : arg);
        }
        if (e instanceof MissingParameterException m && !m.getMissing().isEmpty()) {
            ArgSpec missing = m.getMissing().get(0);
            return missing instanceof OptionSpec o ? "missing value for " + o.longestName()
                    : "no " + missing.paramLabel() + " given";
        }
        if (e.getCause() instanceof IllegalArgumentException bad && e.getArgSpec() instanceof OptionSpec o) {
            return o.longestName() + ": " + bad.getMessage();
        }
        String m = e.getMessage();
        return m == null || m.isEmpty() ? String.valueOf(m) : Character.toLowerCase(m.charAt(0)) + m.substring(1);
    }

    static final class VersionProvider implements CommandLine.IVersionProvider {
        @Override
        public String[] getVersion() {
            return new String[] {"vmcudad " + Version.get()};
        }
    }

    /** {@code vmcudad cache}: only a parent for its subcommands. */
    @Command(name = "cache", description = "the module cache (CONFIG.md \"Module cache\")",
            subcommands = CacheSeed.class)
    static final class Cache {}
}
