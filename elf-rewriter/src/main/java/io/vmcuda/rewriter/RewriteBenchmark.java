package io.vmcuda.rewriter;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * Times {@link ElfRewriter#rewrite} on one input: {@code RewriteBenchmark INPUT [RUNS]} (default 7 runs).
 * Each run writes a fresh output next to a temporary directory and deletes it; prints every run and the
 * median. Build a ~100 MB input with
 * {@code gcc -O1 -o /tmp/big_rodata elf-rewriter/src/test/resources/fixtures/big_rodata.c}.
 */
public final class RewriteBenchmark {
    private RewriteBenchmark() {
    }

    public static void main(String[] args) throws Exception {
        if (args.length < 1 || args.length > 2) {
            System.err.println("usage: RewriteBenchmark INPUT [RUNS]");
            System.exit(2);
        }
        Path input = Path.of(args[0]);
        int runs = args.length == 2 ? Integer.parseInt(args[1]) : 7;
        Path dir = Files.createTempDirectory("vmcuda-rewrite-bench");
        List<Double> millis = new ArrayList<>();
        try {
            for (int i = 0; i < runs; i++) {
                Path output = dir.resolve("out-" + i);
                long start = System.nanoTime();
                ElfRewriter.rewrite(input, output);
                double elapsed = (System.nanoTime() - start) / 1e6;
                millis.add(elapsed);
                System.out.printf("run %d: %.1f ms%n", i + 1, elapsed);
                Files.delete(output);
            }
        } finally {
            Files.deleteIfExists(dir);
        }
        List<Double> sorted = new ArrayList<>(millis);
        Collections.sort(sorted);
        System.out.printf("%s (%d bytes): median %.1f ms over %d runs (min %.1f, max %.1f)%n", input,
                Files.size(input), sorted.get(sorted.size() / 2), runs, sorted.get(0), sorted.get(sorted.size() - 1));
    }
}
