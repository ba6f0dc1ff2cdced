package io.vmcuda.scheduler;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

/**
 * Finds the NVIDIA driver's {@code libcuda.so.1} the way the dynamic linker would, without loading it.
 * {@link CudaDriverQuery} then loads exactly that file, the log names it, and on a host without the driver
 * the inventory says plainly "no NVIDIA driver" instead of relaying a loader error.
 */
public final class LibcudaLocator {
    public static final String LIBRARY = "libcuda.so.1";

    /** Where distributions and the NVIDIA container toolkit put the driver libraries. */
    static final List<String> USUAL_DIRS = List.of(
            "/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/local/nvidia/lib64", "/usr/lib/wsl/lib");

    private LibcudaLocator() {}

    public static Optional<Path> find() {
        List<String> dirs = new ArrayList<>();
        String ldPath = System.getenv("LD_LIBRARY_PATH");
        if (ldPath != null) {
            for (String d : ldPath.split(":")) {
                if (!d.isEmpty()) dirs.add(d);
            }
        }
        for (String d : dirs) {
            Path p = Path.of(d, LIBRARY);
            if (Files.exists(p)) return Optional.of(p);
        }
        Optional<Path> fromCache = fromLdconfigCache();
        if (fromCache.isPresent()) return fromCache;
        for (String d : USUAL_DIRS) {
            Path p = Path.of(d, LIBRARY);
            if (Files.exists(p)) return Optional.of(p);
        }
        return Optional.empty();
    }

    /** Looks the library up in {@code ldconfig -p}; empty when ldconfig is missing or does not know it. */
    static Optional<Path> fromLdconfigCache() {
        for (String ldconfig : List.of("/sbin/ldconfig", "/usr/sbin/ldconfig", "ldconfig")) {
            try {
                Process p = new ProcessBuilder(ldconfig, "-p").redirectErrorStream(true).start();
                Optional<Path> found = Optional.empty();
                try (BufferedReader r = new BufferedReader(
                        new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
                    String line;
                    while ((line = r.readLine()) != null) {
                        if (found.isEmpty()) found = parseLdconfigLine(line);
                    }
                }
                if (!p.waitFor(5, TimeUnit.SECONDS)) p.destroyForcibly();
                return found;
            } catch (IOException e) {
                // this ldconfig path does not exist; try the next one
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return Optional.empty();
            }
        }
        return Optional.empty();
    }

    /** Parses a line like {@code \tlibcuda.so.1 (libc6,x86-64) => /usr/lib/x86_64-linux-gnu/libcuda.so.1}. */
    static Optional<Path> parseLdconfigLine(String line) {
        String t = line.trim();
        if (!t.startsWith(LIBRARY + " ") || !t.contains("x86-64")) return Optional.empty();
        int arrow = t.indexOf("=> ");
        if (arrow < 0) return Optional.empty();
        Path p = Path.of(t.substring(arrow + 3).trim());
        return Files.exists(p) ? Optional.of(p) : Optional.empty();
    }
}
