import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Turns protocol/cuda-driver.spec into the driver front end's generated code: the exported C client
 * stubs of libcuda.so.1, the table cuGetProcAddress answers from, the worker's dispatch (which resolves
 * each ABI in NVIDIA's driver by the same key), the linker version script, the export list, the CUresult
 * names (read from cuda.h) and the Java ids. Compiled and run by the build (protocol/pom.xml) with SpecSupport:
 *   java -cp CLASSES GenerateDriver SPEC CUDA_INCLUDE_DIR C_OUT_DIR JAVA_OUT_DIR
 * Every output is derived from the spec (and NVIDIA's headers); nothing it writes is edited by hand.
 */
public final class GenerateDriver extends SpecSupport {

    enum Kind {
        VALUE, OUT, IN, INOUT, STR, NULL, DEV, IN_ARRAY, OUT_ARRAY;

        boolean array() { return this == IN_ARRAY || this == OUT_ARRAY; }
    }

    static final Map<String, Kind> ANNOTATIONS = Map.of("out", Kind.OUT, "in", Kind.IN, "inout", Kind.INOUT,
            "str", Kind.STR, "null", Kind.NULL, "dev", Kind.DEV, "in[]", Kind.IN_ARRAY, "out[]", Kind.OUT_ARRAY);

    /** An ABI as cuGetProcAddress names it: base name, CUDA version, per-thread-stream variant. */
    record Key(String name, int version, String variant) {
        String pfn() { return "PFN_" + name + "_v" + version + (variant.isEmpty() ? "" : "_" + variant); }
        boolean perThread() { return !variant.isEmpty(); }
    }

    /** {@code uses}: the layouts (Layouts.java) of an internal entry's arguments and reply, or null. */
    record Entry(int id, Mode mode, Key key, String symbol, List<Param<Kind>> params, boolean hasPrototype, int line,
                 Layouts.Uses uses) {
        Entry(int id, Mode mode, Key key, String symbol, List<Param<Kind>> params, boolean hasPrototype, int line) {
            this(id, mode, key, symbol, params, hasPrototype, line, null);
        }

        boolean forwarded() { return mode.forwarded(); }
        boolean async() { return mode.async(); }
        boolean wrapped() { return mode.wrapped(); }
        String clientName() { return wrapped() ? "vmc_forward_" + symbol : symbol; }
        boolean exported() { return mode.exported(); }
    }

    private static final Pattern LINE = Pattern.compile("^(\\d+)\\s+(\\S+)\\s+(\\S+)\\s+(.*)$");
    private static final Pattern KEY = Pattern.compile("^(\\w+)@(\\d+)(?:/(ptsz|ptds))?$");
    private static final Pattern PROTOTYPE = Pattern.compile("^CUresult\\s+(\\w+)\\s*\\((.*)\\)$");

    public static void main(String[] args) throws IOException {
        if (args.length != 4) {
            System.err.println("usage: GenerateDriver SPEC CUDA_INCLUDE_DIR C_OUT_DIR JAVA_OUT_DIR");
            System.exit(2);
        }
        List<Entry> entries;
        List<Layouts.Layout> layouts = new ArrayList<>();
        List<Layouts.Uses> wires = new ArrayList<>();
        Set<String> hooks = new java.util.TreeSet<>();
        try {
            entries = parse(Path.of(args[0]), layouts, wires, hooks);
        } catch (IllegalArgumentException e) {
            System.err.println("cuda-driver.spec: " + e.getMessage());
            System.exit(1);
            return;
        }
        Path include = Path.of(args[1]);
        Path c = Path.of(args[2]);
        Path java = Path.of(args[3]).resolve("io/vmcuda/protocol");
        Files.createDirectories(c);
        Files.createDirectories(java);
        SpecSupport.write(c.resolve("vmc_drv_api.h"), apiHeader(entries));
        SpecSupport.write(c.resolve("vmc_drv_api_names.c"), apiNames(entries));
        SpecSupport.write(c.resolve("vmc_drv_internal.h"), Layouts.header(BANNER, "VMC_DRV_INTERNAL_H", "#include <cuda.h>\n#include \"vmc_nvml_wire.h\"\n",
                layouts, uses(entries, wires)));
        SpecSupport.write(c.resolve("vmc_drv_client_stubs.c"), clientStubs(entries));
        SpecSupport.write(c.resolve("vmc_drv_client_unsupported.c"), clientUnsupported(entries));
        SpecSupport.write(c.resolve("vmc_drv_procs.c"), procTable(entries));
        SpecSupport.write(c.resolve("vmc_drv_trace.c"), traceWrappers(entries));
        SpecSupport.write(c.resolve("vmc_drv_worker_dispatch.c"), workerDispatch(entries, hooks));
        SpecSupport.write(c.resolve("vmc_drv_worker_hooks.h"), workerHooks(entries, hooks));
        SpecSupport.write(c.resolve("libcuda.map"), versionScript(entries));
        SpecSupport.write(c.resolve("driver-exports.txt"), exportList(entries));
        SpecSupport.write(c.resolve("vmc_drv_errnames.c"), errorNames(include.resolve("cuda.h")));
        SpecSupport.write(java.resolve("DriverApiIds.java"), javaIds(entries));
        long forwarded = entries.stream().filter(Entry::forwarded).count();
        long unsupported = entries.stream().filter(e -> e.mode() == Mode.UNSUPPORTED).count();
        System.out.printf("cuda-driver.spec: %d entries, %d forwarded, %d unsupported%n", entries.size(), forwarded, unsupported);
    }

    // ---------------------------------------------------------------- parsing

    /** The layouts internal entries and {@code wire} lines name. */
    static List<Layouts.Uses> uses(List<Entry> entries, List<Layouts.Uses> wires) {
        List<Layouts.Uses> all = new ArrayList<>(entries.stream().map(Entry::uses).filter(java.util.Objects::nonNull).toList());
        all.addAll(wires);
        return all;
    }

    /** The entries of the spec; {@code layouts} receives its layout lines, {@code wires} its wire lines,
     *  {@code hooks} receives the names of its hook lines. */
    static List<Entry> parse(Path spec, List<Layouts.Layout> layouts, List<Layouts.Uses> wires, Set<String> hooks) throws IOException {
        List<Entry> entries = new ArrayList<>();
        Map<String, Layouts.Layout> declared = new LinkedHashMap<>();
        Set<Integer> ids = new HashSet<>();
        Set<String> symbols = new HashSet<>();
        Set<Key> keys = new HashSet<>();
        List<String> lines = Files.readAllLines(spec, StandardCharsets.UTF_8);
        for (int i = 0; i < lines.size(); i++) {
            String raw = lines.get(i).strip();
            if (raw.isEmpty() || raw.startsWith("#")) continue;
            int lineNo = i + 1;
            if (Layouts.isLayoutLine(raw)) {
                Layouts.parseLine(raw, lineNo, declared);
                continue;
            }
            if (SpecSupport.isHookLine(raw)) {
                SpecSupport.addHook(raw, lineNo, h -> entries.stream().anyMatch(e -> e.symbol().equals(h) && e.forwarded()), hooks);
                continue;
            }
            if (Layouts.isWireLine(raw)) {
                Layouts.Uses w = Layouts.parseWire(raw, lineNo, declared);
                if (entries.stream().noneMatch(e -> e.symbol().equals(w.operation()) && e.mode() == Mode.HAND))
                    throw new IllegalArgumentException("line " + lineNo + ": wire " + w.operation() + ": no hand entry of that name above it");
                wires.add(w);
                continue;
            }
            Matcher m = LINE.matcher(raw);
            if (!m.matches()) throw new IllegalArgumentException("line " + lineNo + ": expected ID MODE KEY PROTOTYPE");
            int id = Integer.parseInt(m.group(1));
            if (id < 2000) throw new IllegalArgumentException("line " + lineNo + ": driver ids start at 2000");
            Mode mode = Mode.parse(m.group(2), lineNo);
            Key key = null;
            if (!m.group(3).equals("-")) {
                Matcher k = KEY.matcher(m.group(3));
                if (!k.matches()) throw new IllegalArgumentException("line " + lineNo + ": bad key '" + m.group(3) + "'");
                key = new Key(k.group(1), Integer.parseInt(k.group(2)), k.group(3) == null ? "" : k.group(3));
                if (!keys.add(key)) throw new IllegalArgumentException("line " + lineNo + ": duplicate key " + m.group(3));
            }
            String text = m.group(4).strip();
            Entry e;
            Layouts.Uses uses = mode == Mode.INTERNAL ? Layouts.parseUses(text, lineNo, declared) : null;
            if (mode == Mode.INTERNAL && uses == null)
                throw new IllegalArgumentException("line " + lineNo + ": internal " + text
                        + " must name its layouts: NAME(ARGS) -> REPLY, or NAME() for none");
            if (uses != null) {
                e = new Entry(id, mode, key, uses.operation(), List.of(), false, lineNo, uses);
            } else if (text.matches("\\w+")) {
                if (mode != Mode.UNSUPPORTED && mode != Mode.INTERNAL)
                    throw new IllegalArgumentException("line " + lineNo + ": " + text + " needs a prototype for mode " + mode);
                e = new Entry(id, mode, key, text, List.of(), false, lineNo);
            } else {
                Matcher p = PROTOTYPE.matcher(text);
                if (!p.matches()) throw new IllegalArgumentException("line " + lineNo + ": cannot read prototype '" + text + "'");
                List<Param<Kind>> params = new ArrayList<>();
                String plist = p.group(2).strip();
                if (!plist.isEmpty() && !plist.equals("void"))
                    for (String s : plist.split(",")) params.add(SpecSupport.parseParam(s.strip(), lineNo, ANNOTATIONS, Kind.VALUE));
                e = new Entry(id, mode, key, p.group(1), params, true, lineNo);
            }
            if (key == null && mode != Mode.UNSUPPORTED && mode != Mode.INTERNAL)
                throw new IllegalArgumentException("line " + lineNo + ": " + e.symbol() + " has no key, so it can only be unsupported");
            if (mode == Mode.INTERNAL && (key != null || e.hasPrototype()))
                throw new IllegalArgumentException("line " + lineNo + ": an internal operation has no key and no prototype");
            if (!ids.add(id)) throw new IllegalArgumentException("line " + lineNo + ": duplicate id " + id);
            if (!symbols.add(e.symbol())) throw new IllegalArgumentException("line " + lineNo + ": duplicate symbol " + e.symbol());
            validate(e);
            entries.add(e);
        }
        layouts.addAll(declared.values());
        Set<String> unused = Layouts.unused(layouts, uses(entries, wires));
        if (!unused.isEmpty()) throw new IllegalArgumentException("layouts no operation names: " + unused);
        return entries;
    }

    /** Forwarded calls must say how every pointer travels: the wire cannot guess. */
    static void validate(Entry e) {
        if (!e.forwarded()) return;
        for (Param<Kind> p : e.params()) {
            boolean pointer = p.type().endsWith("*");
            if (p.kind() == Kind.VALUE && pointer)
                throw new IllegalArgumentException("line " + e.line() + ": " + e.symbol() + "(" + p.name()
                        + "): a pointer needs @out/@in/@inout/@str/@null/@dev");
            if (p.kind() != Kind.VALUE && p.kind() != Kind.DEV && !pointer)
                throw new IllegalArgumentException("line " + e.line() + ": @" + p.kind() + " on a non-pointer in " + e.symbol());
            if (e.async() && (p.kind() == Kind.OUT || p.kind() == Kind.INOUT))
                throw new IllegalArgumentException("line " + e.line() + ": async " + e.symbol() + " cannot return values");
            if ((p.kind() == Kind.OUT || p.kind() == Kind.IN || p.kind() == Kind.INOUT || p.kind().array())
                    && p.pointee().endsWith("void"))
                throw new IllegalArgumentException("line " + e.line() + ": " + e.symbol() + "(" + p.name() + "): void has no size");
            if (p.kind() == Kind.OUT_ARRAY && e.async())
                throw new IllegalArgumentException("line " + e.line() + ": async " + e.symbol() + " cannot return values");
            if (p.kind().array()) {
                Param<Kind> n = e.params().stream().filter(q -> q.name().equals(p.count())).findFirst().orElseThrow(
                        () -> new IllegalArgumentException("line " + e.line() + ": " + e.symbol() + "(" + p.name()
                                + "): no parameter " + p.count() + " to count its elements"));
                boolean counts = n.kind() == Kind.VALUE ? !n.pointer() : n.kind() == Kind.IN || n.kind() == Kind.INOUT;
                if (!counts)
                    throw new IllegalArgumentException("line " + e.line() + ": " + e.symbol() + "(" + p.name() + "): its count "
                            + n.name() + " must be an integer or an @in/@inout pointer to one");
            }
        }
    }

    /**
     * A char array (a log buffer): its text comes back whether the call succeeded or not (the driver writes
     * its error log precisely when it fails), up to its NUL, so that a large buffer costs only its text.
     */
    static boolean text(Param<Kind> p) { return p.kind() == Kind.OUT_ARRAY && p.pointee().equals("char"); }

    /** The element count of array parameter {@code p} as C reads it (the count parameter or what it points to). */
    static String countOf(Entry e, Param<Kind> p) {
        Param<Kind> n = e.params().stream().filter(q -> q.name().equals(p.count())).findFirst().orElseThrow();
        return n.kind() == Kind.VALUE ? "(uint64_t)" + n.name() : "(" + n.name() + " ? (uint64_t)*" + n.name() + " : 0)";
    }

    // ---------------------------------------------------------------- C outputs

    static final String BANNER = "/* Generated from protocol/cuda-driver.spec by protocol/src/main/gen/GenerateDriver.java. Do not edit. */\n";

    static String apiHeader(List<Entry> entries) {
        StringBuilder s = new StringBuilder(BANNER);
        s.append("#ifndef VMC_DRV_API_H\n#define VMC_DRV_API_H\n\n#include <stdint.h>\n\n");
        s.append("/* Wire ids of the driver surface; the runtime's (vmc_api.h) stay below VMC_DRV_FIRST_ID. */\n");
        s.append("#define VMC_DRV_FIRST_ID 2000\n\n");
        for (Entry e : entries) s.append("#define VMC_DRV_").append(e.symbol()).append(' ').append(e.id()).append('\n');
        s.append("\n/* Name of a driver wire id, or NULL for an unknown id. */\nconst char *vmc_drv_api_name(uint32_t id);\n\n#endif\n");
        return s.toString();
    }

    static String apiNames(List<Entry> entries) {
        StringBuilder s = new StringBuilder(BANNER);
        s.append("#include \"vmc_drv_api.h\"\n\nconst char *vmc_drv_api_name(uint32_t id) {\n    switch (id) {\n");
        for (Entry e : entries) s.append("    case ").append(e.id()).append(": return \"").append(e.symbol()).append("\";\n");
        s.append("    default: return 0;\n    }\n}\n");
        return s.toString();
    }

    static String declaration(Entry e, String name) {
        return SpecSupport.declaration("CUresult", name, e.params());
    }

    /**
     * The exported stubs. __CUDA_API_VERSION_INTERNAL makes cuda.h declare every exported name as it is
     * (no renaming macros, legacy ABIs included), so the compiler checks each definition against NVIDIA's
     * declaration; the static assertions check it against the key's cudaTypedefs.h typedef.
     */
    static String clientStubs(List<Entry> entries) {
        StringBuilder s = new StringBuilder(BANNER);
        s.append("#define __CUDA_API_VERSION_INTERNAL 1\n#include <cudaTypedefs.h>\n#include <cudaProfilerTypedefs.h>\n")
         .append("#include \"vmc_drv_api.h\"\n#include \"drv_call.h\"\n\n");
        for (Entry e : entries) {
            if (!e.hasPrototype() || e.key() == null || e.mode() == Mode.UNSUPPORTED) continue;
            s.append("_Static_assert(__builtin_types_compatible_p(__typeof__(&").append(e.symbol()).append("), ")
             .append(e.key().pfn()).append("), \"").append(e.symbol()).append(" is not ").append(e.key().pfn()).append("\");\n");
        }
        s.append('\n');
        for (Entry e : entries) {
            if (!e.forwarded()) continue;
            if (e.wrapped()) {
                s.append("/* wrapped: the exported ").append(e.symbol()).append(" is hand-written around this */\n");
                s.append(declaration(e, e.clientName())).append(";\n");
            } else {
                s.append("__attribute__((visibility(\"default\"))) ");
            }
            s.append(declaration(e, e.clientName())).append(" {\n");
            for (Param<Kind> p : e.params())
                if (p.kind() == Kind.NULL)
                    s.append("    static int vmc_told_").append(p.name()).append(";\n    if (").append(p.name())
                     .append(")\n        return vmc_drv_refuse_non_null(\"").append(e.symbol()).append("\", \"").append(p.name())
                     .append("\", &vmc_told_").append(p.name()).append(");\n");
            s.append("    struct vmc_call vmc_c;\n");
            s.append("    CUresult vmc_st = vmc_drv_call_begin(&vmc_c, VMC_DRV_").append(e.symbol()).append(", ")
             .append(e.async() ? 1 : 0).append(");\n");
            s.append("    if (vmc_st != CUDA_SUCCESS)\n        return vmc_st;\n");
            for (Param<Kind> p : e.params()) {
                switch (p.kind()) {
                    case VALUE, DEV -> s.append("    vmc_arg(&vmc_c, &").append(p.name()).append(", sizeof ").append(p.name()).append(");\n");
                    case OUT, IN, INOUT -> s.append("    vmc_arg_pointee(&vmc_c, ").append(p.name()).append(", sizeof *").append(p.name()).append(");\n");
                    case STR -> s.append("    vmc_arg_str(&vmc_c, ").append(p.name()).append(");\n");
                    case NULL, IN_ARRAY, OUT_ARRAY -> { }
                }
            }
            /* arrays travel after the other arguments, so that the worker knows their counts when it reads them */
            for (Param<Kind> p : e.params())
                if (p.kind().array())
                    s.append("    uint64_t vmc_n_").append(p.name()).append(" = ").append(countOf(e, p)).append(";\n")
                     .append("    vmc_arg_array(&vmc_c, ").append(p.name()).append(", sizeof *").append(p.name())
                     .append(", vmc_n_").append(p.name()).append(", ").append(p.kind() == Kind.IN_ARRAY ? 1 : 0).append(");\n");
            s.append("    vmc_st = (CUresult)vmc_call_finish(&vmc_c);\n");
            for (Param<Kind> p : e.params())
                if (p.kind() == Kind.OUT || p.kind() == Kind.INOUT)
                    s.append("    vmc_ret_pointee(&vmc_c, ").append(p.name()).append(", sizeof *").append(p.name()).append(");\n");
            for (Param<Kind> p : e.params())
                if (p.kind() == Kind.OUT_ARRAY)
                    s.append("    vmc_ret_array(&vmc_c, ").append(p.name()).append(", sizeof *").append(p.name())
                     .append(", vmc_n_").append(p.name()).append(text(p) ? ", 1" : ", vmc_st == CUDA_SUCCESS").append(");\n");
            s.append("    return vmc_st;\n}\n\n");
        }
        return s.toString();
    }

    static String clientUnsupported(List<Entry> entries) {
        return SpecSupport.unsupportedStubs(BANNER, "drv_unsupported.h", "vmc_drv_unsupported", "CUDA_ERROR_NOT_SUPPORTED",
                entries.stream().filter(e -> e.mode() == Mode.UNSUPPORTED).map(Entry::symbol).toList());
    }

    /** What cuGetProcAddress looks in: every key, sorted by name then version, with the function that implements it. */
    static String procTable(List<Entry> entries) {
        List<Entry> keyed = keyedSorted(entries);
        StringBuilder s = new StringBuilder(BANNER);
        s.append("/* Without the CUDA headers: only the addresses of the functions are taken here. */\n");
        s.append("#include \"drv_procs.h\"\n\n");
        for (Entry e : keyed) s.append("extern void ").append(e.symbol()).append("(void);\n");
        s.append("\nconst struct vmc_drv_proc vmc_drv_procs[] = {\n");
        for (Entry e : keyed)
            s.append("    {\"").append(e.key().name()).append("\", ").append(e.key().version()).append(", ")
             .append(e.key().perThread() ? 1 : 0).append(", (void *)").append(e.symbol()).append("},\n");
        s.append("};\nconst unsigned vmc_drv_proc_count = ").append(keyed.size()).append(";\n");
        return s.toString();
    }

    /** The keyed entries in the order of the cuGetProcAddress table (name, version, variant). */
    static List<Entry> keyedSorted(List<Entry> entries) {
        List<Entry> keyed = new ArrayList<>();
        for (Entry e : entries) if (e.key() != null) keyed.add(e);
        keyed.sort(Comparator.comparing((Entry e) -> e.key().name()).thenComparingInt(e -> e.key().version())
                .thenComparing(e -> e.key().variant()));
        return keyed;
    }

    /**
     * VMCUDA_TRACE's wrappers: for every entry of the cuGetProcAddress table, in the same order, a function
     * of the same type that calls ours and reports the call and its result (drv_trace.c decides what is
     * printed). cuGetProcAddress hands these out instead of the plain functions only while tracing is on.
     */
    static String traceWrappers(List<Entry> entries) {
        List<Entry> keyed = keyedSorted(entries);
        StringBuilder s = new StringBuilder(BANNER);
        s.append("#define __CUDA_API_VERSION_INTERNAL 1\n#include <cudaTypedefs.h>\n#include <cudaProfilerTypedefs.h>\n")
         .append("#include \"drv_trace.h\"\n\n");
        Set<String> done = new HashSet<>();
        for (Entry e : keyed) {
            if (!e.hasPrototype() || !done.add(e.symbol())) continue;
            s.append("static ").append(declaration(e, "vmc_trace_" + e.symbol())).append(" {\n");
            s.append("    CUresult vmc_r = ").append(e.symbol()).append('(');
            for (int i = 0; i < e.params().size(); i++) s.append(i > 0 ? ", " : "").append(e.params().get(i).name());
            s.append(");\n    vmc_drv_trace_result(\"").append(e.symbol()).append("\", (int)vmc_r);\n    return vmc_r;\n}\n\n");
        }
        s.append("/* Index i wraps vmc_drv_procs[i]; symbols without a prototype (unsupported) are not wrapped. */\n");
        for (Entry e : keyed) if (!e.hasPrototype()) s.append("extern void ").append(e.symbol()).append("(void);\n");
        s.append("void *const vmc_drv_procs_traced[] = {\n");
        for (Entry e : keyed)
            s.append("    (void *)").append(e.hasPrototype() ? "vmc_trace_" : "").append(e.symbol()).append(",\n");
        s.append("};\n");
        return s.toString();
    }

    /** The prototypes of the worker's hooks: the real entry point of the ABI, then the function's own parameters. */
    static String workerHooks(List<Entry> entries, Set<String> hooks) {
        StringBuilder s = new StringBuilder(BANNER);
        s.append("/* The functions through which the worker serves the `hook` entries of cuda-driver.spec (SpecSupport.isHookLine):\n")
         .append(" * each gets NVIDIA's entry point for the call's ABI (never NULL), then the call's arguments. The entry\n")
         .append(" * point's type is spelled out (vmc_w_real_SYMBOL, the same type as cudaTypedefs.h's PFN), as cudaTypedefs.h\n")
         .append(" * declares the legacy ABIs' PFNs only for NVIDIA's internal view. */\n")
         .append("#ifndef VMC_DRV_WORKER_HOOKS_H\n#define VMC_DRV_WORKER_HOOKS_H\n\n#include <cudaTypedefs.h>\n\n");
        for (Entry e : entries) {
            if (!hooks.contains(e.symbol())) continue;
            String real = "vmc_w_real_" + e.symbol();
            s.append("typedef ").append(SpecSupport.declaration("CUresult", "(CUDAAPI *" + real + ")", e.params())).append(";\n");
            List<Param<Kind>> params = new ArrayList<>();
            params.add(new Param<>(real, "real", Kind.VALUE, null));
            params.addAll(e.params());
            s.append(SpecSupport.declaration("CUresult", "vmc_w_hook_" + e.symbol(), params)).append(";\n");
        }
        return s.append("\n#endif\n").toString();
    }

    static String workerDispatch(List<Entry> entries, Set<String> hooks) {
        StringBuilder s = new StringBuilder(BANNER);
        s.append("/* The legacy ABIs' typedefs are only declared for NVIDIA's internal view; nothing here calls by name. */\n")
         .append("#define __CUDA_API_VERSION_INTERNAL 1\n#include <string.h>\n#include <cudaTypedefs.h>\n#include <cudaProfilerTypedefs.h>\n")
         .append("#include \"vmc_drv_api.h\"\n#include \"vmc_drv_worker_hooks.h\"\n#include \"worker_call.h\"\n#include \"worker_driver.h\"\n\n");
        s.append("enum vmc_w_result vmc_worker_drv_dispatch_generated(struct vmc_wcall *vmc_wc) {\n");
        s.append("    switch (vmc_wc->id) {\n");
        for (Entry e : entries) {
            if (!e.forwarded()) continue;
            Key k = e.key();
            s.append("    case VMC_DRV_").append(e.symbol()).append(": {\n");
            s.append("        ").append(k.pfn()).append(" vmc_fn = (").append(k.pfn()).append(")vmc_w_drv_proc(VMC_DRV_")
             .append(e.symbol()).append(", \"").append(k.name()).append("\", ").append(k.version()).append(", ")
             .append(k.perThread() ? 1 : 0).append(");\n");
            List<String> callArgs = new ArrayList<>();
            for (Param<Kind> p : e.params()) {
                String n = p.name();
                switch (p.kind()) {
                    case VALUE, DEV -> {
                        s.append("        ").append(p.type()).append(p.type().endsWith("*") ? "" : " ").append(n).append(";\n");
                        s.append("        vmc_w_arg(vmc_wc, &").append(n).append(", sizeof ").append(n).append(");\n");
                        callArgs.add(n);
                    }
                    case OUT, IN, INOUT -> {
                        String pt = p.pointee();
                        s.append("        ").append(pt).append(' ').append(n).append("_v;\n");
                        s.append("        memset(&").append(n).append("_v, 0, sizeof ").append(n).append("_v);\n");
                        s.append("        ").append(pt).append(" *").append(n).append(" = vmc_w_arg_pointee(vmc_wc, &")
                         .append(n).append("_v, sizeof ").append(n).append("_v);\n");
                        callArgs.add(n);
                    }
                    case STR -> {
                        s.append("        const char *").append(n).append(" = vmc_w_arg_str(vmc_wc);\n");
                        callArgs.add(n);
                    }
                    case NULL -> callArgs.add("NULL");
                    case IN_ARRAY, OUT_ARRAY -> callArgs.add(n);
                }
            }
            for (Param<Kind> p : e.params())
                if (p.kind().array())
                    s.append("        ").append(p.pointee()).append(" *").append(p.name()).append(" = vmc_w_arg_array(vmc_wc, sizeof *")
                     .append(p.name()).append(", ").append(countOf(e, p)).append(");\n");
            // a synchronous call flagged ASYNC would run and have its reply (and the pending async error) dropped
            s.append("        if (!vmc_w_args_ok(vmc_wc)").append(e.async() ? "" : " || vmc_wc->async").append(")\n            return VMC_W_BAD_ARGS;\n");
            String call = hooks.contains(e.symbol()) ? "vmc_w_hook_" + e.symbol() + "(vmc_fn" + (callArgs.isEmpty() ? "" : ", ")
                                                       : "vmc_fn(";
            s.append("        CUresult vmc_st = vmc_fn ? ").append(call).append(String.join(", ", callArgs))
             .append(") : vmc_w_drv_missing(\"").append(e.symbol()).append("\");\n");
            if (e.async()) {
                s.append("        vmc_w_async_done(vmc_wc, (cudaError_t)vmc_st);\n");
            } else {
                s.append("        vmc_w_reply_status(vmc_wc, (cudaError_t)vmc_st);\n");
                for (Param<Kind> p : e.params())
                    if (p.kind() == Kind.OUT || p.kind() == Kind.INOUT)
                        s.append("        vmc_w_reply_pointee(vmc_wc, ").append(p.name()).append(", sizeof ").append(p.name()).append("_v);\n");
                for (Param<Kind> p : e.params())
                    if (p.kind() == Kind.OUT_ARRAY)
                        s.append(text(p) ? "        vmc_w_reply_text(vmc_wc, " + p.name() + ", " + countOf(e, p) + ");\n"
                                 : "        vmc_w_reply_array(vmc_wc, " + p.name() + ", sizeof *" + p.name() + ", "
                                   + countOf(e, p) + ", vmc_st == CUDA_SUCCESS);\n");
            }
            s.append("        return VMC_W_DONE;\n    }\n");
        }
        s.append("    default:\n        return VMC_W_UNKNOWN;\n    }\n}\n");
        return s.toString();
    }

    /** NVIDIA's libcuda.so.1 exports its symbols unversioned; so does ours (an anonymous version node). */
    static String versionScript(List<Entry> entries) {
        return SpecSupport.versionScript("/* Generated from protocol/cuda-driver.spec: every symbol NVIDIA's libcuda.so.1\n"
                + " * exports, unversioned as there, and nothing else. */\n", null, exported(entries));
    }

    static String exportList(List<Entry> entries) {
        return SpecSupport.exportList(exported(entries));
    }

    static List<String> exported(List<Entry> entries) {
        return entries.stream().filter(Entry::exported).map(Entry::symbol).toList();
    }

    /** CUresult names from cuda.h's enum (the texts come from NVIDIA's runtime by code, see drv_errors.c). */
    static String errorNames(Path cudaH) throws IOException {
        String h = Files.readString(cudaH, StandardCharsets.UTF_8);
        int start = h.indexOf("typedef enum cudaError_enum {");
        int end = h.indexOf("} CUresult;", start);
        if (start < 0 || end < 0) throw new IOException(cudaH + ": no CUresult enum");
        Map<String, Integer> codes = new LinkedHashMap<>();
        Matcher m = Pattern.compile("(CUDA_[A-Z0-9_]+)\\s*=\\s*(\\d+)").matcher(h.substring(start, end));
        while (m.find()) codes.put(m.group(1), Integer.parseInt(m.group(2)));
        if (codes.size() < 50) throw new IOException(cudaH + ": only " + codes.size() + " CUresult codes found");
        StringBuilder s = new StringBuilder(BANNER.replace("protocol/cuda-driver.spec", "cuda.h's CUresult enum"));
        s.append("#include \"drv_errors.h\"\n\nconst struct vmc_drv_error_name vmc_drv_error_names[] = {\n");
        for (Map.Entry<String, Integer> c : codes.entrySet())
            s.append("    {").append(c.getValue()).append(", \"").append(c.getKey()).append("\"},\n");
        s.append("};\nconst unsigned vmc_drv_error_name_count = ").append(codes.size()).append(";\n");
        return s.toString();
    }

    // ---------------------------------------------------------------- Java output

    static String javaIds(List<Entry> entries) {
        StringBuilder s = new StringBuilder("// Generated from protocol/cuda-driver.spec by protocol/src/main/gen/GenerateDriver.java. Do not edit.\n");
        s.append("package io.vmcuda.protocol;\n\n/** Wire ids of the CUDA driver surface (see cuda-driver.spec). */\n");
        s.append("public final class DriverApiIds {\n    private DriverApiIds() {}\n\n");
        s.append("    /** The first driver id; runtime ids (ApiIds) are below it. */\n    public static final int FIRST_ID = 2000;\n\n");
        s.append("    /** Name of a driver wire id, or null for an unknown id. */\n    public static String name(int id) {\n        switch (id) {\n");
        for (Entry e : entries) s.append("            case ").append(e.id()).append(": return \"").append(e.symbol()).append("\";\n");
        s.append("            default: return null;\n        }\n    }\n\n");
        s.append("    /** How many symbols the spec lists (NVIDIA's libcuda.so.1 exports as many). */\n    public static final int EXPORTED_SYMBOLS = ")
         .append(entries.stream().filter(Entry::exported).count()).append(";\n}\n");
        return s.toString();
    }
}
