package io.vmcuda.scheduler;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * nvidia-smi as a data source: the inventory when the CUDA driver API does not answer, and the live figures
 * (memory use, utilisation, health, per-process memory) where NVML cannot be loaded in-process. Output is CSV
 * without header or units.
 */
final class NvidiaSmi implements GpuTelemetry {
    static final String USAGE_QUERY = "index,uuid,memory.used,utilization.gpu";
    static final String INVENTORY_QUERY = "index,name,uuid,memory.total,compute_cap";
    static final String PROCESS_QUERY = "pid,used_memory";
    /** Asked separately from usage: a GPU or nvidia-smi that knows none of it still reports its memory. */
    static final String HEALTH_QUERY = "uuid,temperature.gpu,power.draw,clocks.sm,ecc.errors.uncorrected.volatile.total";
    private static final long MIB = 1024L * 1024L;

    private final String executable;

    NvidiaSmi(String executable) {
        this.executable = executable;
    }

    List<GpuInfo> inventory() throws GpuQueryException {
        return parseInventory(run("--query-gpu=" + INVENTORY_QUERY));
    }

    @Override
    public String source() {
        return "nvidia-smi";
    }

    @Override
    public Map<String, GpuUsage> usage() throws GpuQueryException {
        return parseUsage(run("--query-gpu=" + USAGE_QUERY));
    }

    @Override
    public Map<String, GpuHealth> health() throws GpuQueryException {
        return parseHealth(run("--query-gpu=" + HEALTH_QUERY));
    }

    @Override
    public Map<Long, Long> processMemory() throws GpuQueryException {
        return parseProcessMemory(run("--query-compute-apps=" + PROCESS_QUERY));
    }

    /** @param queryOption {@code --query-gpu=...} or {@code --query-compute-apps=...} */
    private String run(String queryOption) throws GpuQueryException {
        Process p;
        try {
            p = new ProcessBuilder(executable, queryOption, "--format=csv,noheader,nounits")
                    .redirectErrorStream(true).start();
        } catch (IOException e) {
            throw new GpuQueryException("nvidia-smi not found (" + e.getMessage() + ")");
        }
        try (InputStream in = p.getInputStream()) {
            // wait first, with a limit: a wedged GPU can hang nvidia-smi, and reading to EOF would wait with it
            // (its output is a few lines: the pipe holds it meanwhile)
            if (!p.waitFor(10, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                throw new GpuQueryException("nvidia-smi did not finish within 10 s");
            }
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            in.transferTo(out);
            String text = out.toString(StandardCharsets.UTF_8);
            if (p.exitValue() != 0) {
                throw new GpuQueryException("nvidia-smi failed: " + firstLine(text));
            }
            return text;
        } catch (IOException e) {
            throw new GpuQueryException("nvidia-smi output unreadable: " + e.getMessage());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new GpuQueryException("interrupted while running nvidia-smi");
        }
    }

    static List<GpuInfo> parseInventory(String csv) throws GpuQueryException {
        List<GpuInfo> gpus = new ArrayList<>();
        for (String line : csv.split("\n")) {
            if (line.isBlank()) continue;
            String[] f = fields(line, 5);
            gpus.add(new GpuInfo(parseInt(f[0], line), f[1], f[2], parseLong(f[3], line) * MIB, f[4]));
        }
        return gpus;
    }

    static Map<String, GpuUsage> parseUsage(String csv) throws GpuQueryException {
        Map<String, GpuUsage> usage = new HashMap<>();
        for (String line : csv.split("\n")) {
            if (line.isBlank()) continue;
            String[] f = fields(line, 4);
            long used = parseLong(f[2], line) * MIB;
            // utilization reads "[N/A]" on some parts (MIG, vGPU)
            int util = f[3].matches("\\d+") ? Integer.parseInt(f[3]) : -1;
            usage.put(f[1], new GpuUsage(used, util));
        }
        return usage;
    }

    static Map<String, GpuHealth> parseHealth(String csv) throws GpuQueryException {
        Map<String, GpuHealth> health = new HashMap<>();
        for (String line : csv.split("\n")) {
            if (line.isBlank()) continue;
            String[] f = fields(line, 5);
            health.put(f[0], new GpuHealth((int) orUnknown(f[1]), f[2].matches("\\d+(\\.\\d+)?") ? Double.parseDouble(f[2]) : -1,
                    (int) orUnknown(f[3]), orUnknown(f[4])));
        }
        return health;
    }

    /** A whole number, or -1 for what nvidia-smi cannot tell ("[N/A]", "[Not Supported]"). */
    private static long orUnknown(String s) {
        return s.matches("\\d{1,18}") ? Long.parseLong(s) : -1;
    }

    static Map<Long, Long> parseProcessMemory(String csv) throws GpuQueryException {
        Map<Long, Long> used = new HashMap<>();
        for (String line : csv.split("\n")) {
            if (line.isBlank() || line.contains("No running")) continue;
            String[] f = fields(line, 2);
            // "[N/A]" where the driver does not tell (some vGPU and MIG set-ups): nothing to enforce with
            if (!f[1].matches("\\d+")) continue;
            used.merge(parseLong(f[0], line), Long.parseLong(f[1]) * MIB, Long::sum);
        }
        return used;
    }

    private static String[] fields(String line, int n) throws GpuQueryException {
        String[] f = line.split(",");
        if (f.length != n) throw new GpuQueryException("unexpected nvidia-smi line: " + line.trim());
        for (int i = 0; i < n; i++) f[i] = f[i].trim();
        return f;
    }

    private static int parseInt(String s, String line) throws GpuQueryException {
        try {
            return Integer.parseInt(s);
        } catch (NumberFormatException e) {
            throw new GpuQueryException("unexpected nvidia-smi line: " + line.trim());
        }
    }

    private static long parseLong(String s, String line) throws GpuQueryException {
        try {
            return Long.parseLong(s);
        } catch (NumberFormatException e) {
            throw new GpuQueryException("unexpected nvidia-smi line: " + line.trim());
        }
    }

    private static String firstLine(String text) {
        String t = text.strip();
        int nl = t.indexOf('\n');
        return nl < 0 ? t : t.substring(0, nl);
    }
}
