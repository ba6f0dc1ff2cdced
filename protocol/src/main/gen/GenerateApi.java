import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Turns protocol/cuda-api.spec into the code both native halves and the daemon share:
 * C client stubs, C worker dispatch, the linker version script, the expected export list and Java ids.
 * Compiled and run by the build (protocol/pom.xml) with SpecSupport:
 *   java -cp CLASSES GenerateApi SPEC C_OUT_DIR JAVA_OUT_DIR
 * Every output is derived from the spec; nothing it writes is edited by hand.
 */
public final class GenerateApi extends SpecSupport {

    /** D2D: a cudaMemcpyKind the worker accepts only as cudaMemcpyDeviceToDevice (the client turns
     *  cudaMemcpyDefault into it); IN_D2D: an @in struct whose `kind` member is held to the same rule.
     *  Both keep client-given host addresses from ever being read or written by the worker. */
    enum Kind { VALUE, OUT, IN, FUNC, SYMBOL, STR, D2D, IN_D2D }

    static final Map<String, Kind> ANNOTATIONS = Map.of("out", Kind.OUT, "in", Kind.IN, "func", Kind.FUNC,
            "symbol", Kind.SYMBOL, "str", Kind.STR, "d2d", Kind.D2D, "in_d2d", Kind.IN_D2D);

    /** The parsed spec: its entries, and the layouts (Layouts.java) internal entries name. */
    record Spec(List<Api> apis, List<Layouts.Layout> layouts, Set<String> hooks) {
        List<Layouts.Uses> uses() { return apis.stream().map(Api::uses).filter(java.util.Objects::nonNull).toList(); }
    }

    /** {@code uses}: the layouts of an internal entry's arguments and reply (vmc_internal.h), or null. */
    record Api(int id, Mode mode, String returnType, String name, List<Param<Kind>> params, int line, Layouts.Uses uses) {
        Api(int id, Mode mode, String returnType, String name, List<Param<Kind>> params, int line) {
            this(id, mode, returnType, name, params, line, null);
        }

        boolean forwarded() { return mode.forwarded(); }
        boolean async() { return mode.async(); }
        boolean wrapped() { return mode.wrapped(); }
        boolean exported() { return mode.exported(); }
        boolean perThread() { return name.endsWith("_ptsz") || name.endsWith("_ptds"); }
    }

    private static final Pattern PROTOTYPE = Pattern.compile("^(.*?)\\b(\\w+)\\s*\\((.*)\\)$");

    public static void main(String[] args) throws IOException {
        if (args.length != 3) {
            System.err.println("usage: GenerateApi SPEC C_OUT_DIR JAVA_OUT_DIR");
            System.exit(2);
        }
        List<Api> apis;
        Spec spec;
        try {
            spec = parse(Path.of(args[0]));
            apis = spec.apis();
        } catch (IllegalArgumentException e) {
            System.err.println("cuda-api.spec: " + e.getMessage());
            System.exit(1);
            return;
        }
        Path c = Path.of(args[1]);
        Path java = Path.of(args[2]).resolve("io/vmcuda/protocol");
        Files.createDirectories(c);
        Files.createDirectories(java);
        SpecSupport.write(c.resolve("vmc_api.h"), apiHeader(apis));
        SpecSupport.write(c.resolve("vmc_api_names.c"), apiNames(apis));
        SpecSupport.write(c.resolve("vmc_internal.h"), internalLayouts(spec));
        SpecSupport.write(c.resolve("vmc_client_stubs.c"), clientStubs(apis));
        SpecSupport.write(c.resolve("vmc_client_unsupported.c"), clientUnsupported(apis));
        SpecSupport.write(c.resolve("vmc_worker_dispatch.c"), workerDispatch(apis, spec.hooks()));
        SpecSupport.write(c.resolve("vmc_worker_hooks.h"), workerHooks(apis, spec.hooks()));
        SpecSupport.write(c.resolve("libcudart.map"), versionScript(apis));
        SpecSupport.write(c.resolve("exports.txt"), exportList(apis));
        SpecSupport.write(java.resolve("ApiIds.java"), javaIds(apis));
        long forwarded = apis.stream().filter(Api::forwarded).count();
        long unsupported = apis.stream().filter(a -> a.mode() == Mode.UNSUPPORTED).count();
        System.out.printf("cuda-api.spec: %d entries, %d forwarded, %d unsupported%n", apis.size(), forwarded, unsupported);
    }

    // ---------------------------------------------------------------- parsing

    static Spec parse(Path spec) throws IOException {
        List<Api> apis = new ArrayList<>();
        Map<String, Layouts.Layout> layouts = new java.util.LinkedHashMap<>();
        Set<String> hooks = new java.util.TreeSet<>();
        Set<Integer> ids = new HashSet<>();
        Set<String> names = new HashSet<>();
        List<String> lines = Files.readAllLines(spec, StandardCharsets.UTF_8);
        for (int i = 0; i < lines.size(); i++) {
            String raw = lines.get(i).strip();
            if (raw.isEmpty() || raw.startsWith("#")) continue;
            int lineNo = i + 1;
            if (Layouts.isLayoutLine(raw)) {
                Layouts.parseLine(raw, lineNo, layouts);
                continue;
            }
            if (SpecSupport.isHookLine(raw)) {
                SpecSupport.addHook(raw, lineNo, h -> apis.stream().anyMatch(a -> a.name().equals(h) && a.forwarded()), hooks);
                continue;
            }
            String[] parts = raw.split("\\s+", 3);
            if (parts.length < 3) throw new IllegalArgumentException("line " + lineNo + ": expected ID MODE PROTOTYPE");
            int id;
            try {
                id = Integer.parseInt(parts[0]);
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("line " + lineNo + ": bad id '" + parts[0] + "'");
            }
            Mode mode = Mode.parse(parts[1], lineNo);
            Layouts.Uses uses = mode == Mode.INTERNAL ? Layouts.parseUses(parts[2], lineNo, layouts) : null;
            if (mode == Mode.INTERNAL && uses == null)
                throw new IllegalArgumentException("line " + lineNo + ": internal " + parts[2].strip()
                        + " must name its layouts: NAME(ARGS) -> REPLY, or NAME() for none");
            Api api;
            if (uses != null) {
                api = new Api(id, mode, "cudaError_t", uses.operation(), List.of(), lineNo, uses);
            } else {
                api = parsePrototype(id, mode, parts[2].strip(), lineNo);
            }
            if (!ids.add(id)) throw new IllegalArgumentException("line " + lineNo + ": duplicate id " + id);
            if (!names.add(api.name())) throw new IllegalArgumentException("line " + lineNo + ": duplicate name " + api.name());
            validate(api);
            apis.add(api);
        }
        Spec parsed = new Spec(apis, List.copyOf(layouts.values()), hooks);
        Set<String> unused = Layouts.unused(parsed.layouts(), parsed.uses());
        if (!unused.isEmpty()) throw new IllegalArgumentException("layouts no operation names: " + unused);
        return parsed;
    }

    static Api parsePrototype(int id, Mode mode, String text, int line) {
        if (text.matches("\\w+")) {
            // A bare name: the headers have no prototype. Only modes that need none may use it.
            if (mode != Mode.UNSUPPORTED && mode != Mode.INTERNAL)
                throw new IllegalArgumentException("line " + line + ": " + text + " needs a prototype for mode " + mode);
            return new Api(id, mode, "cudaError_t", text, List.of(), line);
        }
        Matcher m = PROTOTYPE.matcher(text);
        if (!m.matches()) throw new IllegalArgumentException("line " + line + ": cannot read prototype '" + text + "'");
        String ret = m.group(1).strip();
        String name = m.group(2);
        String plist = m.group(3).strip();
        List<Param<Kind>> params = new ArrayList<>();
        if (!plist.isEmpty() && !plist.equals("void")) {
            if (plist.contains("(")) throw new IllegalArgumentException("line " + line + ": function-pointer parameters need a typedef");
            for (String p : plist.split(",")) params.add(SpecSupport.parseParam(p.strip(), line, ANNOTATIONS, Kind.VALUE));
        }
        return new Api(id, mode, ret, name, params, line);
    }

    /** Forwarded calls must say how every non-trivial pointer travels: the wire cannot guess. */
    static void validate(Api api) {
        if (!api.forwarded()) return;
        if (!api.returnType().equals("cudaError_t"))
            throw new IllegalArgumentException("line " + api.line() + ": forwarded " + api.name() + " must return cudaError_t");
        for (Param<Kind> p : api.params()) {
            String t = p.type().replace(" ", "");
            if (p.kind() == Kind.VALUE && t.endsWith("*") && !t.equals("void*") && !t.equals("constvoid*") && !t.equals("structCUstream_st*"))
                throw new IllegalArgumentException("line " + api.line() + ": " + api.name() + "(" + p.name()
                        + "): a pointer other than a device pointer needs @out/@in/@func/@symbol/@str");
            if (api.async() && p.kind() == Kind.OUT)
                throw new IllegalArgumentException("line " + api.line() + ": async " + api.name() + " cannot return @out values");
            if (p.kind() == Kind.D2D && t.endsWith("*"))
                throw new IllegalArgumentException("line " + api.line() + ": @d2d on a pointer in " + api.name());
            if ((p.kind() == Kind.OUT || p.kind() == Kind.IN || p.kind() == Kind.IN_D2D) && !t.endsWith("*"))
                throw new IllegalArgumentException("line " + api.line() + ": @" + p.kind() + " on a non-pointer in " + api.name());
        }
    }

    // ---------------------------------------------------------------- C outputs

    static final String BANNER = "/* Generated from protocol/cuda-api.spec by protocol/src/main/gen/GenerateApi.java. Do not edit. */\n";

    static String apiHeader(List<Api> apis) {
        StringBuilder s = new StringBuilder(BANNER);
        s.append("#ifndef VMC_API_H\n#define VMC_API_H\n\n#include <stdint.h>\n\n");
        for (Api a : apis) s.append("#define VMC_API_").append(a.name()).append(' ').append(a.id()).append('\n');
        s.append("\n/* Name of a wire id, or NULL for an unknown id. */\nconst char *vmc_api_name(uint32_t id);\n\n#endif\n");
        return s.toString();
    }

    /** The internal operations' typed wire forms (Layouts.java). */
    static String internalLayouts(Spec spec) {
        return Layouts.header(BANNER, "VMC_INTERNAL_H", "#include <cuda_runtime_api.h>\n", spec.layouts(), spec.uses());
    }

    static String apiNames(List<Api> apis) {
        StringBuilder s = new StringBuilder(BANNER);
        s.append("#include \"vmc_api.h\"\n\nconst char *vmc_api_name(uint32_t id) {\n    switch (id) {\n");
        for (Api a : apis) s.append("    case ").append(a.id()).append(": return \"").append(a.name()).append("\";\n");
        s.append("    default: return 0;\n    }\n}\n");
        return s.toString();
    }

    static String prototype(Api a, String name) {
        return SpecSupport.declaration(a.returnType(), name, a.params());
    }

    /** The per-thread variants (_ptsz/_ptds) are only declared by the headers in per-thread builds. */
    static String perThreadDeclarations(List<Api> apis, boolean forwardedOnly) {
        StringBuilder s = new StringBuilder();
        for (Api a : apis)
            if (a.perThread() && (!forwardedOnly || a.forwarded()))
                s.append("extern ").append(prototype(a, a.name())).append(";\n");
        return s.toString();
    }

    static String clientStubs(List<Api> apis) {
        StringBuilder s = new StringBuilder(BANNER);
        s.append("#include <cuda_runtime_api.h>\n#include <cuda_profiler_api.h>\n#include \"vmc_api.h\"\n#include \"shim_call.h\"\n\n");
        s.append(perThreadDeclarations(apis, true)).append('\n');
        for (Api a : apis) {
            if (!a.forwarded()) continue;
            String fname = a.wrapped() ? "vmc_forward_" + a.name() : a.name();
            if (a.wrapped()) s.append("/* wrapped: the exported ").append(a.name()).append(" is hand-written around this */\n");
            else s.append("__attribute__((visibility(\"default\"))) ");
            s.append(prototype(a, fname)).append(" {\n");
            s.append("    struct vmc_call vmc_c;\n");
            s.append("    cudaError_t vmc_st = vmc_call_begin(&vmc_c, VMC_API_").append(a.name()).append(", ")
                    .append(a.async() ? 1 : 0).append(");\n");
            s.append("    if (vmc_st != cudaSuccess)\n        return vmc_st;\n");
            for (Param<Kind> p : a.params()) {
                switch (p.kind()) {
                    case VALUE -> s.append("    vmc_arg(&vmc_c, &").append(p.name()).append(", sizeof ").append(p.name()).append(");\n");
                    case D2D -> s.append("    if (").append(p.name()).append(" == cudaMemcpyDefault)\n        ").append(p.name())
                            .append(" = cudaMemcpyDeviceToDevice;\n    vmc_arg(&vmc_c, &").append(p.name()).append(", sizeof ").append(p.name()).append(");\n");
                    case OUT, IN, IN_D2D -> s.append("    vmc_arg_pointee(&vmc_c, ").append(p.name()).append(", sizeof *").append(p.name()).append(");\n");
                    case FUNC -> s.append("    vmc_arg_func(&vmc_c, ").append(p.name()).append(");\n");
                    case SYMBOL -> s.append("    vmc_arg_symbol(&vmc_c, ").append(p.name()).append(");\n");
                    case STR -> s.append("    vmc_arg_str(&vmc_c, ").append(p.name()).append(");\n");
                }
            }
            s.append("    vmc_st = vmc_call_finish(&vmc_c);\n");
            for (Param<Kind> p : a.params())
                if (p.kind() == Kind.OUT)
                    s.append("    vmc_ret_pointee(&vmc_c, ").append(p.name()).append(", sizeof *").append(p.name()).append(");\n");
            s.append("    return vmc_st;\n}\n\n");
        }
        return s.toString();
    }

    static String clientUnsupported(List<Api> apis) {
        return SpecSupport.unsupportedStubs(BANNER, "shim_unsupported.h", "vmc_unsupported", "cudaErrorNotSupported",
                apis.stream().filter(a -> a.mode() == Mode.UNSUPPORTED).map(Api::name).toList());
    }

    /** The prototypes of the worker's hooks: each the function's own, under the name vmc_w_hook_NAME. */
    static String workerHooks(List<Api> apis, Set<String> hooks) {
        StringBuilder s = new StringBuilder(BANNER);
        s.append("/* The functions through which the worker serves the `hook` entries of cuda-api.spec (SpecSupport.isHookLine). */\n")
         .append("#ifndef VMC_WORKER_HOOKS_H\n#define VMC_WORKER_HOOKS_H\n\n#include <cuda_runtime_api.h>\n\n");
        for (Api a : apis)
            if (hooks.contains(a.name())) s.append(SpecSupport.declaration(a.returnType(), "vmc_w_hook_" + a.name(), a.params())).append(";\n");
        return s.append("\n#endif\n").toString();
    }

    static String workerDispatch(List<Api> apis, Set<String> hooks) {
        StringBuilder s = new StringBuilder(BANNER);
        s.append("#include <string.h>\n#include <cuda_runtime_api.h>\n#include <cuda_profiler_api.h>\n#include \"vmc_api.h\"\n#include \"vmc_worker_hooks.h\"\n#include \"worker_call.h\"\n\n");
        s.append("/* Deprecated entry points (cudaMemcpyToArray...) are still exported and forwarded. */\n")
         .append("#pragma GCC diagnostic ignored \"-Wdeprecated-declarations\"\n\n");
        s.append(perThreadDeclarations(apis, true)).append('\n');
        s.append("enum vmc_w_result vmc_worker_dispatch_generated(struct vmc_wcall *vmc_wc) {\n");
        s.append("    switch (vmc_wc->id) {\n");
        for (Api a : apis) {
            if (!a.forwarded()) continue;
            s.append("    case VMC_API_").append(a.name()).append(": {\n");
            List<String> callArgs = new ArrayList<>();
            for (Param<Kind> p : a.params()) {
                String n = p.name();
                switch (p.kind()) {
                    case VALUE, D2D -> {
                        s.append("        ").append(p.type()).append(p.type().endsWith("*") ? "" : " ").append(n).append(";\n");
                        s.append("        vmc_w_arg(vmc_wc, &").append(n).append(", sizeof ").append(n).append(");\n");
                        callArgs.add(n);
                    }
                    case OUT, IN, IN_D2D -> {
                        String pt = p.pointee();
                        s.append("        ").append(pt).append(pt.endsWith("*") ? "" : " ").append(n).append("_v;\n");
                        s.append("        memset(&").append(n).append("_v, 0, sizeof ").append(n).append("_v);\n");
                        s.append("        ").append(pt).append(" *").append(n).append(" = vmc_w_arg_pointee(vmc_wc, &")
                         .append(n).append("_v, sizeof ").append(n).append("_v);\n");
                        callArgs.add(n);
                    }
                    case FUNC -> {
                        s.append("        const void *").append(n).append(" = vmc_w_arg_func(vmc_wc);\n");
                        callArgs.add(n);
                    }
                    case SYMBOL -> {
                        s.append("        const void *").append(n).append(" = vmc_w_arg_symbol(vmc_wc);\n");
                        callArgs.add(n);
                    }
                    case STR -> {
                        s.append("        const char *").append(n).append(" = vmc_w_arg_str(vmc_wc);\n");
                        callArgs.add(n);
                    }
                }
            }
            // a synchronous call flagged ASYNC would run and have its reply (and the pending async error) dropped
            s.append("        if (!vmc_w_args_ok(vmc_wc)").append(a.async() ? "" : " || vmc_wc->async").append(")\n            return VMC_W_BAD_ARGS;\n");
            for (Param<Kind> p : a.params()) {
                if (p.kind() == Kind.D2D)
                    s.append("        if (").append(p.name()).append(" != cudaMemcpyDeviceToDevice)\n            return VMC_W_BAD_ARGS;\n");
                if (p.kind() == Kind.IN_D2D)
                    s.append("        if (!").append(p.name()).append(" || ").append(p.name())
                     .append("->kind != cudaMemcpyDeviceToDevice)\n            return VMC_W_BAD_ARGS;\n");
            }
            s.append("        cudaError_t vmc_st = ").append(hooks.contains(a.name()) ? "vmc_w_hook_" + a.name() : a.name()).append('(')
             .append(String.join(", ", callArgs)).append(");\n");
            if (a.async()) {
                s.append("        vmc_w_async_done(vmc_wc, vmc_st);\n");
            } else {
                s.append("        vmc_w_reply_status(vmc_wc, vmc_st);\n");
                for (Param<Kind> p : a.params())
                    if (p.kind() == Kind.OUT)
                        s.append("        vmc_w_reply_pointee(vmc_wc, ").append(p.name()).append(", sizeof ").append(p.name()).append("_v);\n");
            }
            s.append("        return VMC_W_DONE;\n    }\n");
        }
        s.append("    default:\n        return VMC_W_UNKNOWN;\n    }\n}\n");
        return s.toString();
    }

    static String versionScript(List<Api> apis) {
        return SpecSupport.versionScript("/* Generated from protocol/cuda-api.spec. Applications' references to the runtime carry\n"
                + " * this version node, so the shim must define every symbol under it. */\n", "libcudart.so.13", exported(apis));
    }

    static String exportList(List<Api> apis) {
        return SpecSupport.exportList(exported(apis));
    }

    static List<String> exported(List<Api> apis) {
        return apis.stream().filter(Api::exported).map(Api::name).toList();
    }

    // ---------------------------------------------------------------- Java output

    static String javaIds(List<Api> apis) {
        StringBuilder s = new StringBuilder("// Generated from protocol/cuda-api.spec by protocol/src/main/gen/GenerateApi.java. Do not edit.\n");
        s.append("package io.vmcuda.protocol;\n\n/** Wire ids of the CUDA runtime surface (see cuda-api.spec). */\n");
        s.append("public final class ApiIds {\n    private ApiIds() {}\n\n");
        for (Api a : apis) s.append("    public static final int ").append(a.name()).append(" = ").append(a.id()).append(";\n");
        s.append("\n    /** Name of a wire id, or null for an unknown id. */\n    public static String name(int id) {\n        switch (id) {\n");
        for (Api a : apis) s.append("            case ").append(a.id()).append(": return \"").append(a.name()).append("\";\n");
        s.append("            default: return null;\n        }\n    }\n\n");
        s.append("    /** How many exported symbols the spec lists. */\n    public static final int EXPORTED_SYMBOLS = ")
         .append(apis.stream().filter(Api::exported).count()).append(";\n}\n");
        return s.toString();
    }
}
