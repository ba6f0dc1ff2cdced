package io.vmcuda.appliance;

import java.net.InetSocketAddress;
import java.nio.file.Path;

/**
 * Command-line options of vmcudad (parsed by {@link DaemonCommand}). {@code workerLibDir} is null when not given
 * (see {@link WorkerLibDir#resolve}); {@code configFile} is null for the built-in defaults.
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

    public static DaemonOptions defaults() {
        return new DaemonOptions(hostPort("127.0.0.1:7070"), hostPort("127.0.0.1:7071"), Path.of("vmcuda-state"),
                null, null);
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
