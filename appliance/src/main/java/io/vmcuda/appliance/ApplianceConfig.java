package io.vmcuda.appliance;

import io.vmcuda.scheduler.PlacementPolicy;
import io.vmcuda.scheduler.SchedulerConfig;
import java.io.IOException;
import java.io.InputStream;
import java.io.Reader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;

/**
 * The daemon's settings: the embedded {@code vmcudad-defaults.properties} overlaid by the --config file.
 * Values are parsed and checked once at start-up so a typo fails the start, not a session later.
 * Keys are documented in appliance/CONFIG.md.
 */
public final class ApplianceConfig {
    static final String DEFAULTS_RESOURCE = "vmcudad-defaults.properties";
    static final String TENANT_PREFIX = "tenant.";
    private static final java.util.regex.Pattern TENANT_KEY =
            java.util.regex.Pattern.compile("tenant\\.([A-Za-z0-9_-]{1,64})\\.(token_sha256|max_sessions|max_gpus|max_memory_bytes|shm_regions|gpu_share|max_connections)");
    /** Most {@code shm.regions} entries; vmcuda-sandbox takes at most this many --region paths (SANDBOX_MAX_REGIONS). */
    public static final int MAX_SHM_REGIONS = 8;
    /**
     * The default of tenant.NAME.max_connections (and the cap of an open appliance's clients together); its
     * built-in value (vmcudad-defaults.properties, 256) is far above what a program normally opens (one
     * connection per CUDA-calling thread, plus up to VMCUDA_COPY_THREADS - 1 copy helpers and one callback
     * thread, e.g. 12 for 8 threads with 4 TCP stripes) even for a tenant running a dozen such sessions, and
     * far below the descriptors of the daemon (LimitNOFILE 65536) and of one worker (worker.max_open_files).
     */
    static final String TENANT_MAX_CONNECTIONS = "control.tenant_max_connections";
    private static final java.util.regex.Pattern SHA256_HEX = java.util.regex.Pattern.compile("[0-9a-fA-F]{64}");

    private final Properties props;

    private ApplianceConfig(Properties props) {
        this.props = props;
        // parse everything now: a bad value must stop the daemon at start-up
        schedulerConfig();
        binaryMaxBytes();
        cacheMemoryBytes();
        cachePublicHashes();
        cacheModuleBytes();
        cacheModuleTenantBytes();
        cacheDiskBytes();
        cacheTenantDiskBytes();
        cacheTenantUploadBytes();
        sessionKeptBytes();
        adminTokenSha256();
        logLevel();
        sessionRecordsMaxBytes();
        workerBlockSize();
        maxHandshakes();
        maxHandshakesPerSource();
        maxUnfinishedFrameBytes();
        tenantMaxConnections();
        authFailuresPerMinute();
        workerExtraEnv();
        workerStartTimeout();
        workerStopGrace();
        sessionDrain();
        workerQuotaCheck();
        workerQuotaSlackBytes();
        workerMaxFileBytes();
        tenants();
        tenantGpuSharePercent();
        handshakeTimeout();
        controlTls();
        idleReleaseMinutes();
        workerSandbox();
        workerUser();
        workerUidPool();
        workerMaxProcesses();
        workerMaxOpenFiles();
        workerTmpSize();
        workerDiskMax();
        workerUcx();
        workerCgroup();
        workerMemoryMaxBytes();
        workerCpuWeight();
        shmRegions();
    }

    /**
     * The defaults, then each {@code *.properties} file of {@code file}'s drop-in directory in name order (for
     * /etc/vmcuda/vmcudad.properties: /etc/vmcuda/vmcudad.d/), then {@code file} itself, a later file's key
     * replacing an earlier one's: the operator's file has the last word. What the package generates (the first
     * tenant, the operator token) goes to a drop-in, so that an upgrade never finds the conffile changed by anyone
     * but the operator, and a key the operator sets in the file replaces the generated one.
     */
    public static ApplianceConfig load(Path file) throws IOException {
        Properties p = defaults();
        for (Path f : files(file)) {
            Properties overrides = new Properties();
            try (Reader r = Files.newBufferedReader(f, StandardCharsets.UTF_8)) {
                overrides.load(r);
            }
            for (String key : overrides.stringPropertyNames()) {
                if (!p.containsKey(key) && !key.startsWith(TENANT_PREFIX)) throw new IllegalArgumentException("unknown config key '" + key + "' in " + f);
                p.setProperty(key, overrides.getProperty(key));
            }
        }
        return new ApplianceConfig(p);
    }

    /** {@code file}'s drop-ins and then {@code file}, in the order they are read; empty for none. */
    public static List<Path> files(Path file) throws IOException {
        List<Path> files = new ArrayList<>();
        if (file == null) return files;
        Path dir = dropInDirectory(file);
        if (Files.isDirectory(dir)) {
            try (var s = Files.list(dir)) {
                s.filter(f -> f.getFileName().toString().endsWith(".properties") && Files.isRegularFile(f)).sorted()
                        .forEach(files::add);
            }
        }
        files.add(file);
        return files;
    }

    /** NAME.properties → NAME.d/ beside it. */
    static Path dropInDirectory(Path file) {
        String name = file.getFileName().toString();
        String base = name.endsWith(".properties") ? name.substring(0, name.length() - ".properties".length()) : name;
        return file.resolveSibling(base + ".d");
    }

    public static ApplianceConfig defaultsOnly() {
        try {
            return load(null);
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }

    /** The keys whose value differs between this configuration and {@code other} (either may lack a key), sorted. */
    public List<String> changedKeys(ApplianceConfig other) {
        java.util.TreeSet<String> keys = new java.util.TreeSet<>(props.stringPropertyNames());
        keys.addAll(other.props.stringPropertyNames());
        List<String> changed = new ArrayList<>();
        for (String k : keys) {
            if (!java.util.Objects.equals(props.getProperty(k), other.props.getProperty(k))) changed.add(k);
        }
        return changed;
    }

    /** A copy with some keys replaced; used by tests and by command-line overrides. */
    public ApplianceConfig with(Map<String, String> overrides) {
        Properties p = new Properties();
        p.putAll(props);
        overrides.forEach(p::setProperty);
        return new ApplianceConfig(p);
    }

    private static Properties defaults() throws IOException {
        Properties p = new Properties();
        try (InputStream in = ApplianceConfig.class.getResourceAsStream(DEFAULTS_RESOURCE)) {
            if (in == null) throw new IOException("embedded " + DEFAULTS_RESOURCE + " missing from the jar");
            p.load(new java.io.InputStreamReader(in, StandardCharsets.UTF_8));
        }
        return p;
    }

    public SchedulerConfig schedulerConfig() {
        return new SchedulerConfig(PlacementPolicy.parse(string("scheduler.policy")),
                (int) longValue("scheduler.max_sessions_per_gpu", 1, 1_000_000),
                Duration.ofSeconds(longValue("scheduler.queue_timeout_s", 0, 86_400)));
    }

    public long binaryMaxBytes() {
        return longValue("binary.max_bytes", 1, Long.MAX_VALUE);
    }

    public long cacheMemoryBytes() {
        return longValue("cache.memory_bytes", 0, Long.MAX_VALUE);
    }

    /** {@code cache.public_sha256}: binaries (by SHA-256, lower-case) every tenant may run without uploading them. */
    public java.util.Set<String> cachePublicHashes() {
        java.util.Set<String> out = new java.util.TreeSet<>();
        for (String h : string("cache.public_sha256").trim().split("[\\s,]+")) {
            if (h.isEmpty()) continue;
            if (!SHA256_HEX.matcher(h).matches()) {
                throw new IllegalArgumentException("cache.public_sha256 entry '" + h + "' is not 64 hex digits");
            }
            out.add(h.toLowerCase(java.util.Locale.ROOT));
        }
        return out;
    }

    /** {@code admin.token_sha256}: the operator token's SHA-256 for the admin port, or null when not set. */
    /** session.kept_bytes: what the directories of ended sessions (their logs) may hold together on the state disk. */
    public long sessionKeptBytes() {
        return longValue("session.kept_bytes", 0, Long.MAX_VALUE);
    }

    /** session.records_max_bytes: the size past which sessions.jsonl moves to sessions.jsonl.1. */
    public long sessionRecordsMaxBytes() {
        return longValue("session.records_max_bytes", 4096, Long.MAX_VALUE);
    }

    /** log.level: error, warn, info or debug. */
    public java.util.logging.Level logLevel() {
        return LogLevel.parse(string("log.level"));
    }

    public byte[] adminTokenSha256() {
        String h = string("admin.token_sha256").strip();
        if (h.isEmpty()) return null;
        if (!SHA256_HEX.matcher(h).matches()) {
            throw new IllegalArgumentException("config key 'admin.token_sha256' must be 64 hex digits "
                    + "(make one with: vmcudad --new-token)");
        }
        return java.util.HexFormat.of().parseHex(h.toLowerCase(java.util.Locale.ROOT));
    }

    /** {@code cache.disk_bytes}: what the binary cache's entries may take on disk. */
    public long cacheDiskBytes() {
        return longValue("cache.disk_bytes", 1, Long.MAX_VALUE);
    }

    /** {@code cache.tenant_disk_bytes}: what entries only one tenant uploaded may take, per tenant; 0 = no limit. */
    public long cacheTenantDiskBytes() {
        return longValue("cache.tenant_disk_bytes", 0, Long.MAX_VALUE);
    }

    /**
     * {@code cache.tenant_upload_bytes}: what one tenant's uploads in progress (executables, client libraries) may
     * announce together; 0 = no limit.
     */
    public long cacheTenantUploadBytes() {
        return longValue("cache.tenant_upload_bytes", 0, Long.MAX_VALUE);
    }

    /** {@code cache.module_bytes}: what the module cache may keep on disk; 0 = no module cache. */
    public long cacheModuleBytes() {
        return longValue("cache.module_bytes", 0, Long.MAX_VALUE);
    }

    /**
     * {@code cache.module_tenant_bytes}: what the module cache entries one tenant holds may take; 0 = no share.
     * {@code auto}: with two or more tenants, {@code cache.module_bytes} divided among them, so that all shares
     * together fit the cache and no tenant's uploads push another's images out; with one tenant or none, no share.
     */
    public long cacheModuleTenantBytes() {
        if (!string("cache.module_tenant_bytes").equals("auto")) return longValue("cache.module_tenant_bytes", 0, Long.MAX_VALUE);
        int n = tenants().size();
        return n >= 2 ? cacheModuleBytes() / n : 0;
    }

    public long workerBlockSize() {
        return longValue("worker.block_size", 4096, 1L << 30);
    }

    /** Empty when not set; the daemon then resolves the worker library directory itself. */
    public String workerLibDir() {
        return string("worker.lib_dir");
    }

    public List<String> workerCudaLibDirs() {
        List<String> dirs = new ArrayList<>();
        for (String d : string("worker.cuda_lib_dirs").split(":")) {
            if (!d.isBlank()) dirs.add(d.strip());
        }
        return dirs;
    }

    /** {@code worker.extra_env}: whitespace-separated NAME=VALUE pairs added to every worker's environment. */
    public Map<String, String> workerExtraEnv() {
        Map<String, String> env = new LinkedHashMap<>();
        for (String pair : string("worker.extra_env").trim().split("\\s+")) {
            if (pair.isEmpty()) continue;
            int eq = pair.indexOf('=');
            if (eq <= 0) throw new IllegalArgumentException("worker.extra_env entry '" + pair + "' is not NAME=VALUE");
            env.put(pair.substring(0, eq), pair.substring(eq + 1));
        }
        return env;
    }

    public Duration workerStartTimeout() {
        return Duration.ofSeconds(longValue("worker.start_timeout_s", 1, 3600));
    }

    /** worker.quota_check_s: how often the driver is asked what each worker uses (0: never). */
    public Duration workerQuotaCheck() {
        return Duration.ofSeconds(longValue("worker.quota_check_s", 0, 3600));
    }

    /** worker.quota_slack_bytes: what a worker may use past its tenant's quota (context, driver reservations). */
    public long workerQuotaSlackBytes() {
        return longValue("worker.quota_slack_bytes", 0, Long.MAX_VALUE);
    }

    public Duration workerStopGrace() {
        return Duration.ofSeconds(longValue("worker.stop_grace_s", 0, 3600));
    }

    /**
     * {@code tenant.NAME.token_sha256} (required per tenant) and the optional caps
     * {@code tenant.NAME.max_sessions}, {@code .max_gpus}, {@code .max_memory_bytes} (0 = no limit), and
     * {@code .max_connections} (0 = no limit; unset: control.tenant_max_connections).
     */
    public List<io.vmcuda.appliance.auth.Tenant> tenants() {
        Map<String, Map<String, String>> byName = new java.util.TreeMap<>();
        for (String key : props.stringPropertyNames()) {
            if (!key.startsWith(TENANT_PREFIX)) continue;
            java.util.regex.Matcher m = TENANT_KEY.matcher(key);
            if (!m.matches()) {
                throw new IllegalArgumentException("config key '" + key + "' is not tenant.NAME.{token_sha256,"
                        + "max_sessions,max_gpus,max_memory_bytes,shm_regions,gpu_share,max_connections} (NAME: letters, digits, _ "
                        + "and -)");
            }
            byName.computeIfAbsent(m.group(1), n -> new java.util.HashMap<>()).put(m.group(2), props.getProperty(key).strip());
        }
        List<io.vmcuda.appliance.auth.Tenant> out = new ArrayList<>();
        java.util.Set<String> hashes = new java.util.HashSet<>();
        for (Map.Entry<String, Map<String, String>> e : byName.entrySet()) {
            String name = e.getKey();
            Map<String, String> f = e.getValue();
            String hash = f.get("token_sha256");
            if (hash == null || !SHA256_HEX.matcher(hash).matches()) {
                throw new IllegalArgumentException("config key 'tenant." + name + ".token_sha256' must be 64 hex digits "
                        + "(make one with: vmcudad --hash-token)");
            }
            if (!hashes.add(hash.toLowerCase())) {
                throw new IllegalArgumentException("tenant '" + name + "' has the same token as another tenant");
            }
            out.add(new io.vmcuda.appliance.auth.Tenant(name, java.util.HexFormat.of().parseHex(hash.toLowerCase()),
                    (int) tenantLong(name, f, "max_sessions", 1_000_000),
                    (int) tenantLong(name, f, "max_gpus", 1024),
                    tenantLong(name, f, "max_memory_bytes", Long.MAX_VALUE),
                    regions("tenant." + name + ".shm_regions", f.getOrDefault("shm_regions", "")),
                    (int) tenantLong(name, f, "gpu_share", 100),
                    f.getOrDefault("max_connections", "").isEmpty() ? io.vmcuda.appliance.auth.Tenant.DEFAULT_CONNECTIONS
                            : (int) tenantLong(name, f, "max_connections", 1_000_000)));
        }
        return out;
    }

    private static long tenantLong(String tenant, Map<String, String> f, String field, long max) {
        String v = f.get(field);
        if (v == null || v.isEmpty()) return 0;
        try {
            long n = Long.parseLong(v);
            if (n < 0 || n > max) throw new NumberFormatException();
            return n;
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("config key 'tenant." + tenant + "." + field + "' = '" + v
                    + "' must be a whole number from 0 (no limit) to " + max);
        }
    }

    /**
     * {@code scheduler.tenant_gpu_share}: the percentage of all GPU slots (GPUs × max_sessions_per_gpu) one
     * tenant's sessions may hold at once when two or more tenants are configured (tenant.NAME.gpu_share
     * overrides it per tenant); with one tenant or none there is nobody to share with.
     */
    public int tenantGpuSharePercent() {
        int share = (int) longValue("scheduler.tenant_gpu_share", 1, 100); // checked even when unused
        return tenants().size() >= 2 ? share : 100;
    }

    /** {@code control.max_handshakes}: connections awaiting their HELLO, in all. */
    public int maxHandshakes() {
        return (int) longValue("control.max_handshakes", 1, 1_000_000);
    }

    /** {@code control.max_handshakes_per_source}: connections awaiting their HELLO from one client address. */
    public int maxHandshakesPerSource() {
        return (int) longValue("control.max_handshakes_per_source", 1, 1_000_000);
    }

    /**
     * {@code control.max_unfinished_frame_bytes}: bytes of frames received in part (HELLO, LIBRARIES) that all control
     * connections together may hold; at least one frame of the largest such kind.
     */
    public long maxUnfinishedFrameBytes() {
        return longValue("control.max_unfinished_frame_bytes", io.vmcuda.protocol.Wire.MAX_CONTROL_PAYLOAD, 1L << 40);
    }

    /**
     * {@code control.tenant_max_connections}: open client connections (NEW and JOIN) of all of one tenant's
     * sessions together, for tenants without tenant.NAME.max_connections, and of all clients of an appliance
     * without tenants; 0 = no limit.
     */
    public int tenantMaxConnections() {
        return (int) longValue(TENANT_MAX_CONNECTIONS, 0, 1_000_000);
    }

    /** {@code control.auth_failures_per_minute}: failed HELLOs one address may make in a minute; 0 = no limit. */
    public int authFailuresPerMinute() {
        return (int) longValue("control.auth_failures_per_minute", 0, 1_000_000);
    }

    /** How long a client may take to send its HELLO, and at most between two BINARY_CHUNKs. */
    /** The files of {@code control.tls_certificate} and {@code control.tls_key}. */
    public record TlsFiles(Path certificate, Path key) {}

    /** TLS on the client port (PROTOCOL.md "Encryption"): both files set and readable, or neither (null: no TLS). */
    public TlsFiles controlTls() {
        String cert = string("control.tls_certificate").strip(), key = string("control.tls_key").strip();
        if (cert.isEmpty() && key.isEmpty()) return null;
        if (cert.isEmpty() || key.isEmpty()) {
            throw new IllegalArgumentException("control.tls_certificate and control.tls_key go together: set both or neither");
        }
        for (String f : List.of(cert, key)) {
            if (!Files.isReadable(Path.of(f))) throw new IllegalArgumentException("TLS file " + f + " is not readable");
        }
        return new TlsFiles(Path.of(cert), Path.of(key));
    }

    public Duration handshakeTimeout() {
        return Duration.ofSeconds(longValue("control.handshake_timeout_s", 1, 3600));
    }

    /** {@code session.idle_release_minutes} as written (may be fractional); "0" = off. */
    public String idleReleaseMinutes() {
        String v = string("session.idle_release_minutes");
        double d;
        try {
            d = Double.parseDouble(v);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("config key 'session.idle_release_minutes' = '" + v + "' is not a number");
        }
        if (!(d >= 0 && d <= 525_600) || v.contains("e") || v.contains("E")) {
            throw new IllegalArgumentException("config key 'session.idle_release_minutes' = '" + v
                    + "' must be a plain number of minutes from 0 (off) to 525600");
        }
        return d == 0 ? "0" : v;
    }

    /** {@code worker.sandbox}: "auto" (on when the daemon runs as root), "true" or "false". */
    public String workerSandbox() {
        String v = string("worker.sandbox").toLowerCase();
        if (!v.equals("auto") && !v.equals("true") && !v.equals("false")) {
            throw new IllegalArgumentException("config key 'worker.sandbox' = '" + v + "' must be auto, true or false");
        }
        return v;
    }

    /**
     * {@code worker.cuda_ipc}: whether workers serve CUDA IPC (cuIpc*, cudaIpc*). NVIDIA's driver opens an IPC handle
     * for any process of the machine that presents it, whatever its user or namespaces, and the tenants' code runs in
     * their workers, so with two or more tenants one could open another's exported buffers. {@code auto}: served
     * when fewer than two tenants are configured; {@code true}: always; {@code false}: never.
     */
    public boolean workerCudaIpc() {
        String v = string("worker.cuda_ipc");
        if (!v.matches("auto|true|false")) {
            throw new IllegalArgumentException("config key 'worker.cuda_ipc' = '" + v + "' must be auto, true or false");
        }
        return v.equals("true") || (v.equals("auto") && tenants().size() < 2);
    }

    /** {@code worker.ucx}: auto, true or false (UcxAgent says what each means). */
    public String workerUcx() {
        String v = string("worker.ucx");
        if (!v.matches("auto|true|false")) {
            throw new IllegalArgumentException("config key 'worker.ucx' = '" + v + "' must be auto, true or false");
        }
        return v;
    }

    /** {@code session.drain_s}: how long a stopping daemon lets running sessions finish before it ends them. */
    public Duration sessionDrain() {
        return Duration.ofSeconds(longValue("session.drain_s", 0, 86_400));
    }

    /** {@code worker.cgroup}: auto, true or false (SessionCgroups says what each means). */
    public String workerCgroup() {
        String v = string("worker.cgroup");
        if (!v.matches("auto|true|false")) {
            throw new IllegalArgumentException("config key 'worker.cgroup' = '" + v + "' must be auto, true or false");
        }
        return v;
    }

    /**
     * {@code worker.memory_max}: the memory one session's processes may use (its cgroup's memory.max): bytes, a
     * size such as 64g, or a percentage of this machine's memory such as 50%.
     */
    public long workerMemoryMaxBytes() {
        String v = string("worker.memory_max");
        java.util.regex.Matcher m = java.util.regex.Pattern.compile("([0-9]{1,15})([kmgtKMGT%]?)").matcher(v);
        if (!m.matches()) {
            throw new IllegalArgumentException("config key 'worker.memory_max' = '" + v
                    + "' must be a size such as 64g or a percentage of the machine's memory such as 50%");
        }
        long n = Long.parseLong(m.group(1));
        String unit = m.group(2).toLowerCase();
        long bytes;
        if (unit.equals("%")) {
            if (n < 1 || n > 100) {
                throw new IllegalArgumentException("config key 'worker.memory_max' = '" + v + "' must be 1% to 100%");
            }
            bytes = physicalMemoryBytes() / 100 * n;
        } else {
            int shift = unit.isEmpty() ? 0 : ("kmgt".indexOf(unit) + 1) * 10;
            bytes = n << shift;
            if (bytes >> shift != n) {
                throw new IllegalArgumentException("config key 'worker.memory_max' = '" + v + "' is too large");
            }
        }
        if (bytes < (64L << 20)) {
            throw new IllegalArgumentException("config key 'worker.memory_max' = '" + v + "' must be at least 64m");
        }
        return bytes;
    }

    /**
     * The memory the daemon and its sessions have: MemTotal of /proc/meminfo, or less where the daemon's cgroup (a
     * container, a systemd slice) is limited, so that a share of it never exceeds what the daemon itself may use.
     */
    private static long physicalMemoryBytes() {
        long total = -1;
        try {
            for (String line : Files.readAllLines(Path.of("/proc/meminfo"))) {
                if (line.startsWith("MemTotal:")) total = Long.parseLong(line.replaceAll("[^0-9]", "")) * 1024;
            }
        } catch (IOException | NumberFormatException e) {
            throw new IllegalStateException("cannot read this machine's memory size from /proc/meminfo: " + e);
        }
        if (total < 0) throw new IllegalStateException("no MemTotal in /proc/meminfo");
        return Math.min(total, io.vmcuda.appliance.worker.CgroupMounts.ofThisProcessMemoryLimit().orElse(Long.MAX_VALUE));
    }

    /** {@code worker.cpu_weight}: each session's cgroup cpu.weight (1 to 10000; 100 = the kernel's default). */
    public int workerCpuWeight() {
        return (int) longValue("worker.cpu_weight", 1, 10_000);
    }

    public String workerSandboxLauncher() {
        return string("worker.sandbox_launcher");
    }

    public String workerUser() {
        String v = string("worker.user");
        if (!v.matches("[A-Za-z0-9_.][A-Za-z0-9_.-]{0,62}")) {
            throw new IllegalArgumentException("config key 'worker.user' = '" + v + "' is not a user name");
        }
        return v;
    }

    /** {@code worker.uid_range}: one uid per sandboxed worker from this range; null when empty (all run as worker.user). */
    public io.vmcuda.appliance.worker.UidPool workerUidPool() {
        return io.vmcuda.appliance.worker.UidPool.parse(string("worker.uid_range"));
    }

    public long workerMaxProcesses() {
        return longValue("worker.max_processes", 16, 1L << 22);
    }

    public long workerMaxOpenFiles() {
        return longValue("worker.max_open_files", 64, 1L << 20);
    }

    /** {@code worker.max_file_bytes}: the largest file a sandboxed worker may write (worker.log too); 0 = no limit. */
    public long workerMaxFileBytes() {
        long v = longValue("worker.max_file_bytes", 0, 1L << 50);
        if (v != 0 && v < (1L << 20)) {
            throw new IllegalArgumentException("config key 'worker.max_file_bytes' = " + v + " must be 0 or at least 1048576");
        }
        return v;
    }

    public String workerTmpSize() {
        String v = string("worker.tmp_size");
        if (!v.matches("[0-9]{1,15}[kmgKMG]?")) {
            throw new IllegalArgumentException("config key 'worker.tmp_size' = '" + v + "' must be a size such as 512m");
        }
        return v;
    }

    /**
     * {@code worker.disk_max}: the size of each session's directory, a tmpfs of its own, where everything its worker
     * may write but /tmp lives (appliance/CONFIG.md "Session disk"); "0": the directory lies on the state disk.
     */
    public String workerDiskMax() {
        String v = string("worker.disk_max");
        if (!v.matches("[0-9]{1,15}[kmgKMG]?")) {
            throw new IllegalArgumentException("config key 'worker.disk_max' = '" + v + "' must be a size such as 2g, or 0");
        }
        return v;
    }

    /**
     * {@code shm.regions}: comma-separated absolute paths of existing shared-memory regions (ivshmem BARs,
     * or files both sides can map) that client rings may live in; empty = none. Workers get them as
     * VMCUDA_SHM_REGIONS, sandboxed workers also as already-open descriptors.
     */
    public List<Path> shmRegions() {
        return regions("shm.regions", string("shm.regions"));
    }

    /** A comma-separated list of existing absolute paths, at most MAX_SHM_REGIONS. */
    private static List<Path> regions(String key, String value) {
        List<Path> regions = new ArrayList<>();
        for (String entry : value.split(",")) {
            String e = entry.strip();
            if (e.isEmpty()) continue;
            Path p;
            try {
                p = e.chars().anyMatch(c -> c < 0x20) ? null : Path.of(e);
            } catch (java.nio.file.InvalidPathException ex) {
                p = null;
            }
            if (p == null || !p.isAbsolute()) {
                throw new IllegalArgumentException("config key '" + key + "': '" + e + "' is not an absolute path");
            }
            if (!Files.exists(p)) {
                throw new IllegalArgumentException("config key '" + key + "': " + e + " does not exist");
            }
            regions.add(p);
        }
        if (regions.size() > MAX_SHM_REGIONS) {
            throw new IllegalArgumentException("config key '" + key + "' lists " + regions.size()
                    + " paths; at most " + MAX_SHM_REGIONS + " are supported");
        }
        return List.copyOf(regions);
    }

    /**
     * cluster.*: the pool this appliance joins; empty when cluster.etcd is empty and {@code etcdOption}
     * (vmcudad --etcd) is null.
     */
    public java.util.Optional<io.vmcuda.appliance.pool.PoolSettings> poolSettings(java.net.InetSocketAddress listen,
                                                                                 String etcdOption) {
        String etcd = etcdOption != null ? etcdOption : string("cluster.etcd");
        if (etcd.isBlank()) return java.util.Optional.empty();
        return java.util.Optional.of(io.vmcuda.appliance.pool.PoolSettings.parse(etcd, this::string,
                k -> longValue(k, 1, 3600), listen));
    }

    private String string(String key) {
        String v = props.getProperty(key);
        if (v == null) throw new IllegalArgumentException("config key '" + key + "' missing");
        return v.strip();
    }

    private long longValue(String key, long min, long max) {
        String v = string(key);
        long n;
        try {
            n = Long.parseLong(v);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("config key '" + key + "' = '" + v + "' is not a whole number");
        }
        if (n < min || n > max) {
            throw new IllegalArgumentException("config key '" + key + "' = " + n + " outside " + min + ".." + max);
        }
        return n;
    }
}
