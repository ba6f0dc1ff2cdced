package io.vmcuda.appliance.pool;

import io.vmcuda.scheduler.pool.PoolPolicy;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.function.Function;
import java.util.function.ToLongFunction;
import java.util.List;
import java.util.Set;

/**
 * The cluster.* settings (appliance/CONFIG.md "Pool of appliances"): in a pool when {@code etcd} is not empty.
 *
 * @param etcd       etcd client URLs (http://HOST:2379)
 * @param prefix     the pool's key prefix in etcd, ending in '/' (default /vmcuda/)
 * @param name       this appliance's name in the pool (unique)
 * @param advertise  HOST:PORT clients are sent to
 * @param shmHosts   identities of the client hosts that can use this appliance's shared-memory path
 * @param ttl        lease TTL: a dead appliance leaves placement within it
 * @param refresh    how often the registration (its load) is rewritten and the lease kept alive
 * @param ticketTtl  how long a placement holds a slot for a client that has not arrived yet
 */
public record PoolSettings(List<String> etcd, String prefix, String name, String advertise, Set<String> shmHosts,
                           Duration ttl, Duration refresh, Duration ticketTtl, PoolPolicy policy) {
    public PoolSettings {
        if (etcd.isEmpty()) throw new IllegalArgumentException("cluster.etcd lists no endpoint");
        for (String e : etcd) {
            if (!e.startsWith("http://") && !e.startsWith("https://"))
                throw new IllegalArgumentException("cluster.etcd entry '" + e + "' is not an http:// URL");
        }
        if (!prefix.startsWith("/") || !prefix.endsWith("/"))
            throw new IllegalArgumentException("cluster.prefix '" + prefix + "' must start and end with '/'");
        if (name.isEmpty() || !name.matches("[A-Za-z0-9._-]{1,128}"))
            throw new IllegalArgumentException("cluster.name '" + name + "' must be 1-128 of A-Z a-z 0-9 . _ -");
        if (ttl.toSeconds() < 2) throw new IllegalArgumentException("cluster.ttl_s must be at least 2");
        if (refresh.compareTo(ttl) >= 0)
            throw new IllegalArgumentException("cluster.refresh_s must be shorter than cluster.ttl_s");
    }

    /**
     * From the cluster.* keys ({@code text} and {@code seconds} read one key each); names left empty get
     * defaults from this host and the client port.
     */
    public static PoolSettings parse(String etcd, Function<String, String> text, ToLongFunction<String> seconds,
                                     InetSocketAddress listen) {
        List<String> urls = Arrays.stream(etcd.split(",")).map(String::strip).filter(u -> !u.isEmpty())
                .map(u -> u.endsWith("/") ? u.substring(0, u.length() - 1) : u).toList();
        String host = hostName();
        String listenHost = listen.getAddress() == null || listen.getAddress().isAnyLocalAddress()
                ? host : listen.getAddress().getHostAddress();
        if (listenHost.contains(":")) listenHost = "[" + listenHost + "]";
        String name = text.apply("cluster.name");
        String advertise = text.apply("cluster.advertise");
        String shm = text.apply("cluster.shm_hosts");
        Set<String> shmHosts = shm.isEmpty() ? Set.of(thisHostIdentity())
                : Set.copyOf(Arrays.stream(shm.split(",")).map(String::strip).filter(h -> !h.isEmpty()).toList());
        return new PoolSettings(urls, text.apply("cluster.prefix"),
                name.isEmpty() ? (host + "-" + listen.getPort()).replaceAll("[^A-Za-z0-9._-]", "_") : name,
                advertise.isEmpty() ? listenHost + ":" + listen.getPort() : advertise, shmHosts,
                Duration.ofSeconds(seconds.applyAsLong("cluster.ttl_s")),
                Duration.ofSeconds(seconds.applyAsLong("cluster.refresh_s")),
                Duration.ofSeconds(seconds.applyAsLong("cluster.ticket_ttl_s")),
                PoolPolicy.parse(text.apply("cluster.policy")));
    }

    /**
     * How clients on this host name it for the locality policy: /etc/machine-id (what the client shim sends
     * unless VMCUDA_HOST_ID says otherwise), else the host name.
     */
    static String thisHostIdentity() {
        try {
            String id = Files.readString(Path.of("/etc/machine-id")).strip();
            if (!id.isEmpty()) return id;
        } catch (IOException e) {
            // containers may have none
        }
        return hostName();
    }

    private static String hostName() {
        try {
            return InetAddress.getLocalHost().getHostName();
        } catch (IOException e) {
            return "localhost";
        }
    }

    /** The URLs as etcd's client takes them. */
    public String[] endpoints() {
        return etcd.toArray(String[]::new);
    }
}
