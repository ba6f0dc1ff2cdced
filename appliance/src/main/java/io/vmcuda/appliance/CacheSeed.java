package io.vmcuda.appliance;

import io.vmcuda.appliance.cache.ModuleCache;
import io.vmcuda.appliance.cache.ModuleImages;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Set;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/**
 * {@code vmcudad cache seed [--state-dir DIR] [--config FILE] FILE...}, a subcommand of {@link DaemonCommand}:
 * puts the module images of the appliance's own copies of the CUDA libraries (or of any CUDA program, fat binary
 * or cubin) into the module cache as public entries, so that every tenant's first program that loads them sends
 * none of their bytes. Public: seed only what every tenant may have, such as NVIDIA's libraries. Clients ask by
 * SHA-256 of the exact bytes, so a seed helps those whose library is the same build as the seeded one.
 */
@Command(name = "seed", sortOptions = false, sortSynopsis = false, description = "put the module images of CUDA "
        + "libraries, programs, fat binaries or cubins into the module cache as public entries (every tenant may "
        + "use them)")
final class CacheSeed implements Callable<Integer> {
    @Option(names = "--state-dir", paramLabel = "DIR",
            description = "the daemon's state directory (default ./vmcuda-state)")
    Path stateDir = DaemonOptions.defaults().stateDir();

    @Option(names = "--config", paramLabel = "FILE", description = "the daemon's properties file (cache.module_bytes)")
    Path configFile;

    @Parameters(paramLabel = "FILE", arity = "1..*", description = "the files whose module images to seed")
    List<Path> files;

    @Spec
    CommandSpec spec;

    /** Returns the exit status: 0 when every file gave at least one image and all were stored. */
    @Override
    public Integer call() {
        PrintWriter out = spec.commandLine().getOut(), err = spec.commandLine().getErr();
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
