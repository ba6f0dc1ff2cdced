package io.vmcuda.rewriter;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** What binutils' readelf says about a file: the independent judge of the rewriter's output. */
final class Readelf {
    private static final Pattern NEEDED = Pattern.compile("\\(NEEDED\\)\\s+Shared library: \\[(.*)]");

    private Readelf() {
    }

    /** Everything readelf -lSdW writes to stderr (warnings and errors) for these files, in one run. */
    static String complaints(List<Path> files) {
        List<String> command = new ArrayList<>(List.of("readelf", "-lSdW"));
        files.forEach(f -> command.add(f.toString()));
        Processes.Result r = Processes.run(command);
        return r.stderr() + (r.exitCode() == 0 ? "" : "readelf exit " + r.exitCode() + "\n");
    }

    static List<String> neededLibraries(Path file) {
        Processes.Result r = Processes.run(List.of("readelf", "-dW", file.toString()));
        List<String> needed = new ArrayList<>();
        Matcher m = NEEDED.matcher(r.stdout());
        while (m.find()) {
            needed.add(m.group(1));
        }
        return needed;
    }

    static String dynamicSymbols(Path file) {
        return Processes.run(List.of("readelf", "--dyn-syms", "-VW", file.toString())).stdout();
    }

    static String programHeaders(Path file) {
        return Processes.run(List.of("readelf", "-lW", file.toString())).stdout();
    }
}
