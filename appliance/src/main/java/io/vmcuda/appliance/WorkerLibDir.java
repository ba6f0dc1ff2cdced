package io.vmcuda.appliance;

import java.net.URISyntaxException;
import java.nio.file.Path;
import java.security.CodeSource;

/**
 * Where libvmcuda-worker.so lives: --worker-lib-dir, else $VMCUDA_WORKER_LIB_DIR, else the config's
 * worker.lib_dir, else next to the daemon's own code: {@code appliance/target/native} when running from a
 * checkout ({@code target/classes} or {@code target/vmcuda-appliance-*.jar}), {@code <bundle>/native} when
 * running from a bundle ({@code <bundle>/lib/*.jar}).
 */
final class WorkerLibDir {
    static final String LIBRARY = "libvmcuda-worker.so";

    private WorkerLibDir() {}

    static Path resolve(Path fromCommandLine, String fromEnv, String fromConfig) {
        if (fromCommandLine != null) return fromCommandLine.toAbsolutePath();
        if (fromEnv != null && !fromEnv.isBlank()) return Path.of(fromEnv).toAbsolutePath();
        if (fromConfig != null && !fromConfig.isBlank()) return Path.of(fromConfig).toAbsolutePath();
        return besideCode(codeLocation());
    }

    /** @param code the jar or classes directory this class was loaded from */
    static Path besideCode(Path code) {
        if (code == null) return Path.of("native").toAbsolutePath();
        Path dir = code.getParent(); // of target/classes or of the jar
        if (dir == null) return Path.of("native").toAbsolutePath();
        String name = dir.getFileName() == null ? "" : dir.getFileName().toString();
        if (name.equals("target")) return dir.resolve("native");   // checkout: appliance/target/{classes,*.jar}
        if (name.equals("lib") && dir.getParent() != null) return dir.getParent().resolve("native"); // bundle
        return dir.resolve("native");
    }

    private static Path codeLocation() {
        try {
            CodeSource cs = WorkerLibDir.class.getProtectionDomain().getCodeSource();
            return cs == null ? null : Path.of(cs.getLocation().toURI()).toAbsolutePath();
        } catch (URISyntaxException | SecurityException e) {
            return null;
        }
    }
}
