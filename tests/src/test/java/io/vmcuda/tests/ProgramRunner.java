package io.vmcuda.tests;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/** Runs one command with its output captured to files (no pipe can fill up and stall it). */
final class ProgramRunner {

    /** Generous: a program that hangs must not hang the build; no test asserts on time. */
    static final long TIMEOUT_SECONDS = 120;

    record Result(List<String> command, int exitCode, String stdout, String stderr, boolean timedOut) {
        String describe() {
            return "command: " + String.join(" ", command) + "\nexit code: " + exitCode
                    + (timedOut ? " (killed after " + TIMEOUT_SECONDS + " s)" : "")
                    + "\n--- stdout ---\n" + stdout + "--- stderr ---\n" + stderr + "--- end ---\n";
        }
    }

    private ProgramRunner() {}

    /**
     * @param env variables to set (a null value removes the variable)
     * @param logPrefix files logPrefix.out / logPrefix.err keep the output for later inspection
     */
    static Result run(List<String> command, Map<String, String> env, Path workDir, Path logPrefix)
            throws IOException, InterruptedException {
        Path out = Path.of(logPrefix + ".out");
        Path err = Path.of(logPrefix + ".err");
        Files.createDirectories(out.getParent());
        ProcessBuilder pb = new ProcessBuilder(command).directory(workDir.toFile())
                .redirectInput(ProcessBuilder.Redirect.from(Path.of("/dev/null").toFile()))
                .redirectOutput(out.toFile())
                .redirectError(err.toFile());
        env.forEach((k, v) -> {
            if (v == null) pb.environment().remove(k);
            else pb.environment().put(k, v);
        });
        Process p = pb.start();
        boolean done = p.waitFor(TIMEOUT_SECONDS, TimeUnit.SECONDS);
        if (!done) {
            p.descendants().forEach(ProcessHandle::destroyForcibly);
            p.destroyForcibly();
            p.waitFor();
        }
        return new Result(new ArrayList<>(command), p.exitValue(),
                Files.readString(out, StandardCharsets.UTF_8), Files.readString(err, StandardCharsets.UTF_8), !done);
    }
}
