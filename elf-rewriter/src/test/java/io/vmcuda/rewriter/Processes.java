package io.vmcuda.rewriter;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/** Runs external tools (compilers, readelf, the fixtures themselves) and captures what they print. */
final class Processes {
    record Result(int exitCode, String stdout, String stderr) {
        @Override
        public String toString() {
            return "exit " + exitCode + "\n--- stdout\n" + stdout + "--- stderr\n" + stderr;
        }
    }

    private Processes() {
    }

    static Result run(List<String> command) {
        return run(command, Map.of());
    }

    static Result run(List<String> command, Map<String, String> environment) {
        try {
            Path stdout = Files.createTempFile("vmcuda-test", ".out");
            Path stderr = Files.createTempFile("vmcuda-test", ".err");
            try {
                ProcessBuilder builder = new ProcessBuilder(command)
                        .redirectOutput(stdout.toFile()).redirectError(stderr.toFile());
                builder.environment().putAll(environment);
                Process process = builder.start();
                if (!process.waitFor(5, TimeUnit.MINUTES)) {
                    process.destroyForcibly();
                    throw new IllegalStateException("did not finish: " + command);
                }
                // Latin-1: corrupted binaries make readelf print arbitrary bytes.
                return new Result(process.exitValue(), Files.readString(stdout, StandardCharsets.ISO_8859_1),
                        Files.readString(stderr, StandardCharsets.ISO_8859_1));
            } finally {
                Files.deleteIfExists(stdout);
                Files.deleteIfExists(stderr);
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    /** Runs a build step and fails loudly if it does not succeed. */
    static void require(List<String> command) {
        Result r = run(command);
        if (r.exitCode() != 0) {
            throw new IllegalStateException(String.join(" ", command) + " failed:\n" + r);
        }
    }

    static boolean onPath(String tool) {
        for (String dir : System.getenv().getOrDefault("PATH", "").split(":")) {
            if (!dir.isEmpty() && Files.isExecutable(Path.of(dir, tool))) {
                return true;
            }
        }
        return false;
    }
}
