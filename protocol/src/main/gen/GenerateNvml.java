import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Turns protocol/nvml.spec into the NVML front end's generated code: the exported stubs of the functions it
 * does not serve, NVML's return codes (a header of constants) and their texts (nvmlErrorString's table), the
 * linker version script and the export list the build checks the library against. Compiled and run by the
 * build (protocol/pom.xml) with SpecSupport:
 *   java -cp CLASSES GenerateNvml SPEC C_OUT_DIR
 * Nothing it writes is edited by hand.
 */
public final class GenerateNvml extends SpecSupport {

    record Function(String name, boolean hand) {}

    record ErrorCode(int code, String name, String text) {}

    private static final Pattern FN = Pattern.compile("^fn\\s+(nvml\\w+)\\s+(hand|unsupported)$");
    private static final Pattern ERROR = Pattern.compile("^error\\s+(\\d+)\\s+(NVML_\\w+)\\s+(.+)$");
    private static final String BANNER = "/* Generated from protocol/nvml.spec by GenerateNvml. Do not edit. */\n";

    public static void main(String[] args) throws IOException {
        if (args.length != 2) {
            System.err.println("usage: GenerateNvml SPEC C_OUT_DIR");
            System.exit(2);
        }
        List<Function> functions = new ArrayList<>();
        List<ErrorCode> errors = new ArrayList<>();
        try {
            parse(Path.of(args[0]), functions, errors);
        } catch (IllegalArgumentException e) {
            System.err.println("nvml.spec: " + e.getMessage());
            System.exit(1);
            return;
        }
        Path c = Path.of(args[1]);
        Files.createDirectories(c);
        List<String> all = functions.stream().map(Function::name).toList();
        List<String> unsupported = functions.stream().filter(f -> !f.hand()).map(Function::name).toList();
        SpecSupport.write(c.resolve("vmc_nvml_unsupported.c"), SpecSupport.unsupportedStubs(BANNER,
                "nvml_unsupported.h", "vmc_nvml_unsupported", "NVML_ERROR_NOT_SUPPORTED", unsupported));
        SpecSupport.write(c.resolve("vmc_nvml_codes.h"), codesHeader(errors));
        SpecSupport.write(c.resolve("vmc_nvml_errors.c"), errorTexts(errors));
        SpecSupport.write(c.resolve("libnvidia-ml.map"), SpecSupport.versionScript(
                "/* Generated from protocol/nvml.spec: every symbol of NVIDIA's libnvidia-ml.so.1, unversioned. */\n",
                null, all));
        SpecSupport.write(c.resolve("nvml-exports.txt"), SpecSupport.exportList(all));
        SpecSupport.write(c.resolve("nvml-hand.txt"), SpecSupport.exportList(
                functions.stream().filter(Function::hand).map(Function::name).toList()));
    }

    static void parse(Path spec, List<Function> functions, List<ErrorCode> errors) throws IOException {
        TreeSet<String> seen = new TreeSet<>();
        TreeSet<Integer> codes = new TreeSet<>();
        int n = 0;
        for (String raw : Files.readAllLines(spec, StandardCharsets.UTF_8)) {
            n++;
            String line = raw.strip();
            if (line.isEmpty() || line.startsWith("#")) continue;
            Matcher f = FN.matcher(line), e = ERROR.matcher(line);
            if (f.matches()) {
                if (!seen.add(f.group(1))) throw new IllegalArgumentException("line " + n + ": " + f.group(1) + " twice");
                functions.add(new Function(f.group(1), f.group(2).equals("hand")));
            } else if (e.matches()) {
                int code = Integer.parseInt(e.group(1));
                if (!codes.add(code)) throw new IllegalArgumentException("line " + n + ": code " + code + " twice");
                if (e.group(3).contains("\"") || e.group(3).contains("\\"))
                    throw new IllegalArgumentException("line " + n + ": quotes or backslashes in an error text");
                errors.add(new ErrorCode(code, e.group(2), e.group(3)));
            } else {
                throw new IllegalArgumentException("line " + n + ": neither 'fn NAME hand|unsupported' nor 'error CODE NAME TEXT'");
            }
        }
        if (functions.isEmpty() || errors.isEmpty()) throw new IllegalArgumentException("no functions or no error codes");
    }

    static String codesHeader(List<ErrorCode> errors) {
        StringBuilder s = new StringBuilder(BANNER).append("#ifndef VMC_NVML_CODES_H\n#define VMC_NVML_CODES_H\n\n");
        s.append("/* NVML's return codes (nvmlReturn_t). */\n");
        for (ErrorCode e : errors) s.append("#define ").append(e.name()).append(' ').append(e.code()).append('\n');
        return s.append("\n#endif\n").toString();
    }

    static String errorTexts(List<ErrorCode> errors) {
        StringBuilder s = new StringBuilder(BANNER).append("#include <stddef.h>\n\n");
        s.append("/* The text nvmlErrorString gives for a return code, or NULL for a code NVML does not define. */\n");
        s.append("const char *vmc_nvml_error_text(int code);\n\nconst char *vmc_nvml_error_text(int code) {\n    switch (code) {\n");
        for (ErrorCode e : errors)
            s.append("    case ").append(e.code()).append(": return \"").append(e.text()).append("\";\n");
        return s.append("    default: return NULL;\n    }\n}\n").toString();
    }
}
