package io.vmcuda.appliance;

import java.net.InetSocketAddress;
import java.nio.file.Path;

/**
 * Command-line options of vmcudad. {@code workerLibDir} is null when not given (see
 * {@link WorkerLibDir#resolve}); {@code configFile} is null for the built-in defaults.
 */
public record DaemonOptions(InetSocketAddress listen, InetSocketAddress admin, Path stateDir, Path configFile,
                            Path workerLibDir, boolean insecure, String etcd) {
    public DaemonOptions(InetSocketAddress listen, InetSocketAddress admin, Path stateDir, Path configFile,
                         Path workerLibDir) {
        this(listen, admin, stateDir, configFile, workerLibDir, false);
    }

    public DaemonOptions(InetSocketAddress listen, InetSocketAddress admin, Path stateDir, Path configFile,
                         Path workerLibDir, boolean insecure) {
        this(listen, admin, stateDir, configFile, workerLibDir, insecure, null);
    }

    public static final String USAGE = String.join("\n",
            "usage: vmcudad [--listen HOST:PORT] [--admin HOST:PORT] [--state-dir DIR] [--config FILE]",
            "               [--worker-lib-dir DIR] [--insecure] [--log-level error|warn|info|debug]",
            "               [--etcd http://HOST:2379[,...]]",
            "       vmcudad --hash-token [TOKEN] | --new-token | --version | --help",
            "       vmcudad cache seed [--state-dir DIR] [--config FILE] FILE...   (CUDA libraries' module images,",
            "                    public in the module cache: CONFIG.md \"Module cache\")",
            "  --listen          client port (default 127.0.0.1:7070)",
            "  --admin           HTTP status/metrics port (default 127.0.0.1:7071)",
            "  --state-dir       binary cache, session logs, worker socket (default ./vmcuda-state)",
            "  --config          properties file; every key in CONFIG.md",
            "  --worker-lib-dir  directory of libvmcuda-worker.so (default: $VMCUDA_WORKER_LIB_DIR,",
            "                    worker.lib_dir, appliance/target/native in a checkout, <bundle>/native)",
            "  --insecure        allow a non-loopback --listen without tenant tokens (anyone who can reach",
            "                    the port may run code on the GPUs)",
            "  --log-level       error, warn, info (default) or debug; the properties key log.level likewise",
            "  --etcd            join the pool of appliances on this etcd (the properties key cluster.etcd",
            "                    likewise; CONFIG.md \"Pool of appliances\")",
            "  --hash-token      print the tenant.NAME.token_sha256 value of TOKEN (or of the line on stdin)",
            "  --new-token       print a new random token and its tenant.NAME.token_sha256 line",
            "Running sessions end when the daemon stops: on SIGTERM it stops accepting, sends its workers",
            "SIGTERM, and SIGKILL to those still alive after worker.stop_grace_s.",
            "CONFIG.md: /usr/share/doc/vmcuda-appliance/CONFIG.md (package), appliance/CONFIG.md (source).");

    public static DaemonOptions defaults() {
        return new DaemonOptions(hostPort("127.0.0.1:7070"), hostPort("127.0.0.1:7071"), Path.of("vmcuda-state"),
                null, null);
    }

    /** Parses the arguments (after --version/--help were handled); throws IllegalArgumentException with a reason. */
    public static DaemonOptions parse(String[] args) {
        DaemonOptions o = defaults();
        for (int i = 0; i < args.length; i++) {
            String a = args[i];
            if (a.equals("--insecure")) {
                o = new DaemonOptions(o.listen, o.admin, o.stateDir, o.configFile, o.workerLibDir, true, o.etcd);
                continue;
            }
            String v;
            int eq = a.indexOf('=');
            String name = a.startsWith("--") && eq > 0 ? a.substring(0, eq) : a;
            if (!java.util.Set.of("--listen", "--admin", "--state-dir", "--config", "--worker-lib-dir", "--etcd").contains(name)) {
                throw new IllegalArgumentException("unknown option " + name);
            }
            if (a.startsWith("--") && eq > 0) {
                v = a.substring(eq + 1);
                a = name;
            } else {
                if (i + 1 >= args.length) throw new IllegalArgumentException("missing value for " + a);
                v = args[++i];
            }
            switch (a) {
                case "--listen":
                    o = new DaemonOptions(hostPort(v), o.admin, o.stateDir, o.configFile, o.workerLibDir, o.insecure, o.etcd);
                    break;
                case "--admin":
                    o = new DaemonOptions(o.listen, hostPort(v), o.stateDir, o.configFile, o.workerLibDir, o.insecure, o.etcd);
                    break;
                case "--state-dir":
                    o = new DaemonOptions(o.listen, o.admin, Path.of(v), o.configFile, o.workerLibDir, o.insecure, o.etcd);
                    break;
                case "--config":
                    o = new DaemonOptions(o.listen, o.admin, o.stateDir, Path.of(v), o.workerLibDir, o.insecure, o.etcd);
                    break;
                case "--worker-lib-dir":
                    o = new DaemonOptions(o.listen, o.admin, o.stateDir, o.configFile, Path.of(v), o.insecure, o.etcd);
                    break;
                case "--etcd":
                    o = new DaemonOptions(o.listen, o.admin, o.stateDir, o.configFile, o.workerLibDir, o.insecure, v);
                    break;
                default:
                    throw new IllegalArgumentException("unknown option " + a);
            }
        }
        return o;
    }

    /** HOST:PORT, [IPv6]:PORT or :PORT (all interfaces); port 0 picks a free one. */
    static InetSocketAddress hostPort(String s) {
        int colon = s.lastIndexOf(':');
        if (colon < 0) throw new IllegalArgumentException("'" + s + "' is not HOST:PORT");
        String host = s.substring(0, colon);
        if (host.startsWith("[") && host.endsWith("]")) host = host.substring(1, host.length() - 1);
        int port;
        try {
            port = Integer.parseInt(s.substring(colon + 1));
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("'" + s + "' has no numeric port");
        }
        if (port < 0 || port > 65535) throw new IllegalArgumentException("port out of range in '" + s + "'");
        return host.isEmpty() ? new InetSocketAddress(port) : new InetSocketAddress(host, port);
    }
}
