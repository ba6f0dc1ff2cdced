package io.vmcuda.appliance.admin;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.logging.Logger;

/**
 * The GPUs' XID errors (the driver's critical error events), as {@code vmcuda-xid-watch} (xid_watch.c) reports them
 * from NVML's event API: counted per GPU and XID for /metrics ({@code vmcuda_gpu_xid_errors_total}) and logged as
 * they come. An appliance whose driver or GPUs cannot report them says why once and goes on without.
 */
public final class XidWatch implements AutoCloseable {
    private static final Logger LOG = Logger.getLogger(XidWatch.class.getName());
    static final String HELPER = "vmcuda-xid-watch";
    /** What the commonest XIDs mean, for the log line (NVIDIA's XID catalogue); others are logged by number. */
    private static final Map<Long, String> KNOWN = Map.ofEntries(
            Map.entry(13L, "graphics engine exception (often the application's own fault)"),
            Map.entry(31L, "GPU memory page fault (often the application's own fault)"),
            Map.entry(43L, "a GPU context stopped after a fault"),
            Map.entry(45L, "preemptive cleanup after a fault"),
            Map.entry(48L, "double-bit ECC error"),
            Map.entry(63L, "ECC page retirement or row remapping recorded"),
            Map.entry(64L, "ECC page retirement or row remapping failed"),
            Map.entry(74L, "NVLink error"),
            Map.entry(79L, "the GPU has fallen off the bus"),
            Map.entry(92L, "high single-bit ECC error rate"),
            Map.entry(94L, "contained ECC error"),
            Map.entry(95L, "uncontained ECC error: reset the GPU"),
            Map.entry(119L, "GSP RPC timeout"),
            Map.entry(120L, "GSP error"));

    private final Process process;
    private final Map<String, Map<Long, AtomicLong>> counts = new ConcurrentHashMap<>();
    private volatile int watched;
    private volatile String problem = "starting";

    private XidWatch(Process process) {
        this.process = process;
        Thread reader = new Thread(this::read, "xid-watch");
        reader.setDaemon(true);
        reader.start();
    }

    /**
     * Starts the helper from {@code dir} with the daemon's environment plus {@code env}; null (and one log line)
     * where it is missing or cannot start.
     */
    public static XidWatch start(Path dir, Map<String, String> env) {
        Path helper = dir.resolve(HELPER).toAbsolutePath();
        if (!Files.isExecutable(helper)) {
            LOG.info("GPU XID errors not watched: " + helper + " is missing (it is built next to libvmcuda-worker.so)");
            return null;
        }
        try {
            ProcessBuilder pb = new ProcessBuilder(helper.toString()).redirectErrorStream(true);
            pb.environment().putAll(env);
            return new XidWatch(pb.start());
        } catch (IOException e) {
            LOG.warning("GPU XID errors not watched: cannot start " + helper + ": " + e.getMessage());
            return null;
        }
    }

    private void read() {
        try (BufferedReader in = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
            for (String line; (line = in.readLine()) != null; ) {
                try {
                    take(line);
                } catch (RuntimeException e) { // a line this daemon does not understand must not end the watching
                    LOG.fine("xid watcher line not understood: " + line);
                }
            }
        } catch (IOException e) {
            // the helper is gone; its exit is reported below
        }
        if (watched > 0) {
            problem = "the watcher ended" + (problem == null ? "" : ": " + problem);
            watched = 0;
            LOG.warning("GPU XID errors no longer watched: " + HELPER + " ended");
        }
    }

    private void take(String line) {
        String[] f = line.split(" ", 3);
        switch (f[0]) {
            case "WATCHING" -> {
                watched = Integer.parseInt(f[1].strip());
                problem = null;
                LOG.info("GPU XID errors watched on " + watched + " GPU(s) (NVML events)");
            }
            case "UNSUPPORTED" -> LOG.info("GPU " + f[1] + " cannot report XID errors: " + (f.length > 2 ? f[2] : "?"));
            case "XID" -> {
                if (f.length < 3) return;
                long xid = Long.parseUnsignedLong(f[2].strip());
                counts.computeIfAbsent(f[1], u -> new ConcurrentHashMap<>()).computeIfAbsent(xid, x -> new AtomicLong())
                        .incrementAndGet();
                LOG.warning("GPU " + f[1] + " reported XID " + Long.toUnsignedString(xid)
                        + (KNOWN.containsKey(xid) ? ": " + KNOWN.get(xid) : ""));
            }
            case "ERROR" -> {
                problem = line.length() > 6 ? line.substring(6) : "the watcher failed";
                LOG.info("GPU XID errors not watched: " + problem);
            }
            case "WAITFAIL" -> LOG.warning("waiting for XID events failed (" + (f.length > 1 ? line.substring(9) : "?")
                    + "); the watcher tries again");
            default -> LOG.fine("xid watcher said: " + line);
        }
    }

    /** XID errors so far: GPU UUID → XID → count. */
    public Map<String, Map<Long, Long>> counts() {
        Map<String, Map<Long, Long>> out = new TreeMap<>();
        counts.forEach((uuid, byXid) -> {
            Map<Long, Long> m = new TreeMap<>();
            byXid.forEach((x, n) -> m.put(x, n.get()));
            out.put(uuid, m);
        });
        return out;
    }

    /** GPUs whose XID errors are watched now (0 before the watcher is up, or after it failed). */
    public int watched() {
        return watched;
    }

    /** Why nothing is watched, or null while it is. */
    public String problem() {
        return problem;
    }

    @Override
    public void close() {
        process.destroy();
    }
}
