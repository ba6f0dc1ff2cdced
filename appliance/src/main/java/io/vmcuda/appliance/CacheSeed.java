package io.vmcuda.appliance;

import io.vmcuda.appliance.cache.ModuleCache;
import io.vmcuda.appliance.cache.ModuleImages;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;

/**
 * {@code vmcudad cache seed [--state-dir DIR] [--config FILE] FILE...}: puts the module images of the
 * appliance's own copies of the CUDA libraries (or of any CUDA program, fat binary or cubin) into the module
 * cache as public entries, so that every tenant's first program that loads them sends none of their bytes.
 * Public: seed only what every tenant may have, such as NVIDIA's libraries. Clients ask by SHA-256 of the
 * exact bytes, so a seed helps those whose library is the same build as the seeded one.
 */
public final class CacheSeed {
    static final String USAGE = "usage: vmcudad cache seed [--state-dir DIR] [--config FILE] FILE...";

    private CacheSeed() {}

    /** Returns the exit status: 0 when every file gave at least one image and all were stored. */
    static int run(String[] args, PrintStream out, PrintStream err) {
        Path stateDir = DaemonOptions.defaults().stateDir();
        Path configFile = null;
        List<Path> files = new ArrayList<>();
        for (int i = 2; i < args.length; i++) {
            String a = args[i];
            if ((a.equals("--state-dir") || a.equals("--config")) && i + 1 < args.length) {
                Path v = Path.of(args[++i]);
                if (a.equals("--state-dir")) stateDir = v;
                else configFile = v;
            } else if (a.startsWith("--")) {
                err.println("vmcudad: unknown option " + a + "\n" + USAGE);
                return 2;
            } else {
                files.add(Path.of(a));
            }
        }
        if (files.isEmpty()) {
            err.println(USAGE);
            return 2;
        }
        ModuleCache cache;
        try {
            ApplianceConfig config = ApplianceConfig.load(configFile);
            if (config.cacheModuleBytes() <= 0) {
                err.println("vmcudad cache seed: the module cache is off (cache.module_bytes = 0)");
                return 1;
            }
            cache = new ModuleCache(stateDir.resolve("modules"), config.cacheModuleBytes(), Set.of());
        } catch (IOException | IllegalArgumentException e) {
            err.println("vmcudad cache seed: " + e.getMessage());
            return 1;
        }
        int status = 0;
        for (Path f : files) {
            try {
                if (!Files.isRegularFile(f)) throw new IOException("not a regular file");
                List<ModuleImages.Image> images = ModuleImages.in(f);
                if (images.isEmpty()) {
                    err.println("vmcudad cache seed: " + f + ": no module images in it (not a CUDA library, program, "
                            + "fat binary or cubin)");
                    status = 1;
                    continue;
                }
                long bytes = 0;
                for (ModuleImages.Image image : images) {
                    cache.seedPublic(f, image);
                    bytes += image.length();
                }
                out.println(f + ": " + images.size() + " module image(s), " + bytes + " bytes, in the module cache for "
                        + "every tenant");
            } catch (IOException | RuntimeException e) { // a file that is not what it claims to be: say so, go on
                err.println("vmcudad cache seed: " + f + ": " + e.getMessage());
                status = 1;
            }
        }
        return status;
    }
}
