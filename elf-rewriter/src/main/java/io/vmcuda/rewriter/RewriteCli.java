package io.vmcuda.rewriter;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * {@code vmcuda-rewrite [--needed LIB] [--entry-symbol SYM] INPUT OUTPUT} and
 * {@code vmcuda-rewrite --check [--needed LIB] [--entry-symbol SYM] INPUT}.
 *
 * <p>Exit status: 0 done (or: can be rewritten), 2 the input cannot be rewritten or the command line is
 * wrong, 1 an I/O error. Every failure is one line on stderr starting with {@code vmcuda-rewrite: }.
 */
public final class RewriteCli {
    static final int OK = 0;
    static final int IO_ERROR = 1;
    static final int REFUSED = 2;
    private static final String PREFIX = "vmcuda-rewrite: ";
    private static final String USAGE = "usage: vmcuda-rewrite [--needed LIB] [--entry-symbol SYM] INPUT OUTPUT"
            + " | vmcuda-rewrite --check [--needed LIB] [--entry-symbol SYM] INPUT";

    private RewriteCli() {
    }

    public static void main(String[] args) {
        System.exit(run(args, System.out, System.err));
    }

    static int run(String[] args, PrintStream out, PrintStream err) {
        String needed = ElfRewriter.DEFAULT_NEEDED;
        String entrySymbol = ElfRewriter.DEFAULT_ENTRY_SYMBOL;
        boolean check = false;
        List<String> files = new ArrayList<>();
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--check" -> check = true;
                case "--needed", "--entry-symbol" -> {
                    if (i + 1 >= args.length || !validName(args[i + 1])) {
                        return usage(err, args[i] + " needs a non-empty printable ASCII name");
                    }
                    if (args[i].equals("--needed")) {
                        needed = args[++i];
                    } else {
                        entrySymbol = args[++i];
                    }
                }
                case "-h", "--help" -> {
                    out.println(USAGE);
                    return OK;
                }
                default -> {
                    if (args[i].startsWith("--")) {
                        return usage(err, "unknown option " + args[i]);
                    }
                    files.add(args[i]);
                }
            }
        }
        if (files.size() != (check ? 1 : 2)) {
            return usage(err, check ? "--check takes one INPUT" : "expected INPUT and OUTPUT");
        }
        Path input = Path.of(files.get(0));
        try {
            if (check) {
                out.println(PREFIX + input + ": can be rewritten: " + ElfRewriter.describe(input, needed, entrySymbol));
            } else {
                ElfRewriter.rewrite(input, Path.of(files.get(1)), needed, entrySymbol);
            }
            return OK;
        } catch (ElfRewriteException e) {
            err.println(PREFIX + input + ": " + e.getMessage());
            return REFUSED;
        } catch (IOException e) {
            err.println(PREFIX + input + ": I/O error: " + describe(e));
            return IO_ERROR;
        }
    }

    private static boolean validName(String name) {
        return !name.isEmpty() && name.chars().allMatch(c -> c > 0x20 && c < 0x7f);
    }

    private static int usage(PrintStream err, String problem) {
        err.println(PREFIX + problem + "; " + USAGE);
        return REFUSED;
    }

    private static String describe(IOException e) {
        String message = e.getMessage() == null ? "" : ": " + e.getMessage().replace('\n', ' ');
        return e.getClass().getSimpleName() + message;
    }
}
