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

    private final Properties props;

    private ApplianceConfig(Properties props) {
        this.props = props;
        // parse everything now: a bad value must stop the daemon at start-up
        schedulerConfig();
        binaryMaxBytes();
        cacheMemoryBytes();
        workerBlockSize();
        workerExtraEnv();
        workerStartTimeout();
        workerStopGrace();
    }

    public static ApplianceConfig load(Path file) throws IOException {
        Properties p = defaults();
        if (file != null) {
            Properties overrides = new Properties();
            try (Reader r = Files.newBufferedReader(file, StandardCharsets.UTF_8)) {
                overrides.load(r);
            }
            for (String key : overrides.stringPropertyNames()) {
                if (!p.containsKey(key)) throw new IllegalArgumentException("unknown config key '" + key + "' in " + file);
                p.setProperty(key, overrides.getProperty(key));
            }
        }
        return new ApplianceConfig(p);
    }

    public static ApplianceConfig defaultsOnly() {
        try {
            return load(null);
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
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

    public Duration workerStopGrace() {
        return Duration.ofSeconds(longValue("worker.stop_grace_s", 0, 3600));
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
