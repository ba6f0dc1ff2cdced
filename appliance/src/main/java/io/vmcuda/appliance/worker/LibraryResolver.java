package io.vmcuda.appliance.worker;

import io.vmcuda.rewriter.ElfDependencies;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.logging.Logger;

/**
 * Which DT_NEEDED names of a shipped program (or of a library shipped with it) a worker's dynamic loader would
 * not find on this appliance: the worker's LD_LIBRARY_PATH (the worker library and CUDA directories), the loader's
 * cache ({@code ldconfig -p}, read once) and the default directories. The object's own DT_RPATH/DT_RUNPATH is not
 * looked at: it names the client's directories, and looking up client-chosen paths here (as root) would tell a
 * tenant which files exist on the appliance, other tenants' cache entries included. A library the appliance has
 * only on such a path is then sent by the client, which costs bytes, not correctness. A name with a '/' is a path
 * the loader opens itself; a name that is not a plain file name is left to the loader too.
 */
public final class LibraryResolver {
    private static final Logger LOG = Logger.getLogger(LibraryResolver.class.getName());
    private static final List<Path> DEFAULT_DIRS = List.of(Path.of("/lib/x86_64-linux-gnu"), Path.of("/usr/lib/x86_64-linux-gnu"),
            Path.of("/lib64"), Path.of("/usr/lib64"), Path.of("/lib"), Path.of("/usr/lib"));
    private static final java.util.regex.Pattern FILE_NAME = java.util.regex.Pattern.compile("[A-Za-z0-9_+][A-Za-z0-9._+-]{0,254}");
    private final List<Path> workerPath;
    private volatile Set<String> loaderCache;

    public LibraryResolver(List<Path> workerPath) {
        this.workerPath = List.copyOf(workerPath);
    }

    /** The names {@code deps} needs that neither the appliance nor {@code provided} (libraries already shipped) has. */
    public List<String> missing(ElfDependencies deps, Set<String> provided) {
        List<Path> dirs = new ArrayList<>(workerPath);
        dirs.addAll(DEFAULT_DIRS);
        Set<String> missing = new LinkedHashSet<>();
        for (String name : deps.needed()) {
            if (!FILE_NAME.matcher(name).matches() || provided.contains(name)) continue;
            if (dirs.stream().anyMatch(d -> Files.isRegularFile(d.resolve(name)))) continue;
            if (loaderCache().contains(name)) continue;
            missing.add(name);
        }
        return List.copyOf(missing);
    }

    /** The names in the dynamic loader's cache (64-bit entries of {@code ldconfig -p}); empty when it cannot be read. */
    private Set<String> loaderCache() {
        Set<String> c = loaderCache;
        if (c != null) return c;
        Set<String> names = new HashSet<>();
        for (String ldconfig : List.of("/sbin/ldconfig", "/usr/sbin/ldconfig")) {
            if (!Files.isExecutable(Path.of(ldconfig))) continue;
            try {
                Process p = new ProcessBuilder(ldconfig, "-p").redirectErrorStream(true).start();
                p.getOutputStream().close();
                for (String line : new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).split("\n")) {
                    String t = line.strip(); // "libz.so.1 (libc6,x86-64) => /lib/x86_64-linux-gnu/libz.so.1"
                    int paren = t.indexOf(" (");
                    if (paren > 0 && t.contains("x86-64")) names.add(t.substring(0, paren));
                }
                p.waitFor(10, TimeUnit.SECONDS);
                break;
            } catch (IOException e) {
                LOG.warning("cannot read the loader's cache with " + ldconfig + " -p: " + e.getMessage());
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                break;
            }
        }
        loaderCache = Set.copyOf(names);
        return loaderCache;
    }
}
