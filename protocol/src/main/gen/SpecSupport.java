import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Collection;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * What the two spec generators share (GenerateApi for cuda-api.spec, GenerateDriver for
 * cuda-driver.spec): the modes of an entry, parameters and their annotations, C declarations, the
 * stubs of unsupported functions, export lists, and writing outputs only when they change. The generators
 * extend it only to name its nested types (Mode, Param) without qualification; it has no state.
 */
abstract class SpecSupport {
    SpecSupport() {}

    /** How an entry is handled (the header of each spec explains them). */
    enum Mode {
        SYNC, ASYNC, SYNC_WRAPPED, ASYNC_WRAPPED, LOCAL, HAND, UNSUPPORTED, INTERNAL;

        static Mode parse(String word, int line) {
            try {
                return valueOf(word.toUpperCase(Locale.ROOT).replace('-', '_'));
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException("line " + line + ": unknown mode '" + word + "'");
            }
        }

        /** A generated client stub marshals the call and the generated dispatch serves it. */
        boolean forwarded() { return this == SYNC || this == ASYNC || this == SYNC_WRAPPED || this == ASYNC_WRAPPED; }
        boolean async() { return this == ASYNC || this == ASYNC_WRAPPED; }
        /** The generated forwarder is vmc_forward_NAME; the exported NAME is hand-written around it. */
        boolean wrapped() { return this == SYNC_WRAPPED || this == ASYNC_WRAPPED; }
        boolean exported() { return this != INTERNAL; }
    }

    /**
     * A parameter; {@code kind} is the generator's own enum of annotations, {@code count} the parameter
     * named in an array annotation ({@code @out[numNodes]}), or null.
     */
    record Param<K>(String type, String name, K kind, String count) {
        boolean pointer() { return type.trim().endsWith("*"); }

        /** The type a pointer parameter points to, without const: storage for it in the worker. */
        String pointee() {
            String t = type.trim();
            if (!t.endsWith("*")) throw new IllegalStateException("not a pointer: " + type + " " + name);
            t = t.substring(0, t.length() - 1).trim();
            if (t.startsWith("const ")) t = t.substring(6).trim();
            return t;
        }

        /** {@code TYPE NAME} as C writes it. */
        String declared() { return type + (pointer() ? "" : " ") + name; }
    }

    private static final Pattern ANNOTATION = Pattern.compile("@(\\w+)(?:\\[(\\w+)\\])?");
    private static final Pattern TRAILING_NAME = Pattern.compile("(\\w+)$");

    /**
     * Reads {@code TYPE NAME [@annotation[COUNT]]}; {@code annotations} maps each annotation the spec allows
     * to its kind (an array annotation is looked up as {@code NAME[]}), {@code plain} is the kind of an
     * unannotated parameter.
     */
    static <K> Param<K> parseParam(String text, int line, Map<String, K> annotations, K plain) {
        K kind = plain;
        String count = null;
        Matcher a = ANNOTATION.matcher(text);
        if (a.find()) {
            count = a.group(2);
            String key = a.group(1) + (count == null ? "" : "[]");
            kind = annotations.get(key);
            if (kind == null) throw new IllegalArgumentException("line " + line + ": unknown annotation @" + key);
            text = text.substring(0, a.start()).strip();
        }
        Matcher n = TRAILING_NAME.matcher(text);
        if (!n.find() || n.start() == 0)
            throw new IllegalArgumentException("line " + line + ": parameter without a name: '" + text + "'");
        return new Param<>(text.substring(0, n.start()).strip(), n.group(1), kind, count);
    }

    /** {@code RET NAME(params)} without the semicolon. */
    static String declaration(String returnType, String name, List<? extends Param<?>> params) {
        StringBuilder s = new StringBuilder(returnType).append(' ').append(name).append('(');
        if (params.isEmpty()) s.append("void");
        for (int i = 0; i < params.size(); i++) s.append(i > 0 ? ", " : "").append(params.get(i).declared());
        return s.append(')').toString();
    }

    /**
     * The exported stubs of unsupported functions, deliberately without the CUDA headers: they ignore
     * their arguments, so they are defined without prototypes, and each calls {@code reporter(NAME, &told)}
     * (declared in {@code header}), which prints one line once and returns the "not supported" code.
     */
    static String unsupportedStubs(String banner, String header, String reporter, String code, Collection<String> names) {
        StringBuilder s = new StringBuilder(banner);
        s.append("/* Deliberately without the CUDA headers: these functions ignore their arguments, so they are\n")
         .append(" * defined without prototypes; every one returns ").append(code).append(". */\n");
        s.append("#include \"").append(header).append("\"\n\n");
        for (String name : names)
            s.append("__attribute__((visibility(\"default\"))) int ").append(name).append("() {\n")
             .append("    static int vmc_told;\n")
             .append("    return ").append(reporter).append("(\"").append(name).append("\", &vmc_told);\n}\n");
        return s.toString();
    }

    /** A linker version script exporting exactly {@code names}: under {@code node}, or unversioned when null. */
    static String versionScript(String comment, String node, Collection<String> names) {
        StringBuilder s = new StringBuilder(comment).append(node == null ? "{" : node + " {").append("\n  global:\n");
        for (String name : names) s.append("    ").append(name).append(";\n");
        return s.append("  local:\n    *;\n};\n").toString();
    }

    /** The sorted list the build compares with the library's real exports. */
    static String exportList(Collection<String> names) {
        return String.join("\n", new TreeSet<>(names)) + "\n";
    }

    /**
     * {@code hook NAME}: the worker serves forwarded entry NAME through a function of its own, vmc_w_hook_NAME,
     * which the generated dispatch calls with the decoded arguments instead of NAME (the session's memory
     * quota, worker_quota*.c, wraps the allocators this way and decodes nothing itself).
     */
    static boolean isHookLine(String raw) { return raw.startsWith("hook ") || raw.startsWith("hook\t"); }

    /** Adds a hook line's NAME to {@code hooks}: a forwarded entry above it ({@code forwarded}), named once. */
    static void addHook(String raw, int line, java.util.function.Predicate<String> forwarded, java.util.Set<String> hooks) {
        String name = raw.substring(4).strip();
        if (!name.matches("\\w+")) throw new IllegalArgumentException("line " + line + ": expected hook NAME");
        if (!forwarded.test(name))
            throw new IllegalArgumentException("line " + line + ": hook " + name + ": no forwarded entry of that name above it");
        if (!hooks.add(name)) throw new IllegalArgumentException("line " + line + ": hook " + name + " twice");
    }

    /** Rewrites only on change, so that make does not rebuild everything on each Maven run. */
    static void write(Path p, String content) throws IOException {
        byte[] bytes = content.getBytes(StandardCharsets.UTF_8);
        if (Files.exists(p) && java.util.Arrays.equals(Files.readAllBytes(p), bytes)) return;
        Files.write(p, bytes);
    }
}
