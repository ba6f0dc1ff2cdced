import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * wire.spec → the wire protocol's constants for C (vmc_wire_constants.h) and Java (io.vmcuda.protocol.Wire):
 * frame types with the limit of each one's payload, flags, roles, HELLO_REPLY statuses, ERROR codes, the copy
 * mode bits and the array markers. Usage: GenerateWire SPEC C_OUT_DIR JAVA_OUT_DIR
 */
public final class GenerateWire extends SpecSupport {
    /** One line of the spec; {@code limit} only for frames. */
    record Entry(String kind, String name, String value, String limit, String comment) {
    }

    /** How each kind is named in C and in Java (the spec's header says the same). */
    private static final Map<String, String[]> PREFIXES = Map.of(
            "const", new String[] {"VMC_", ""},
            "size", new String[] {"VMC_", ""},
            "frame", new String[] {"VMC_", "TYPE_"},
            "flag", new String[] {"VMC_FLAG_", "FLAG_"},
            "role", new String[] {"VMC_ROLE_", "ROLE_"},
            "status", new String[] {"VMC_", "HELLO_"},
            "error", new String[] {"VMC_ERROR_", "ERROR_"},
            "copy", new String[] {"COPY_", "COPY_"},
            "array", new String[] {"VMC_ARRAY_", "ARRAY_"});

    public static void main(String[] args) throws IOException {
        if (args.length != 3) throw new IllegalArgumentException("usage: GenerateWire SPEC C_OUT_DIR JAVA_OUT_DIR");
        List<Entry> entries = parse(Files.readAllLines(Path.of(args[0]), StandardCharsets.UTF_8));
        write(Path.of(args[1]).resolve("vmc_wire_constants.h"), c(entries));
        write(Path.of(args[2]).resolve("io/vmcuda/protocol/Wire.java"), java(entries));
    }

    static List<Entry> parse(List<String> lines) {
        List<Entry> out = new ArrayList<>();
        Map<String, String> consts = new LinkedHashMap<>();
        for (int i = 0; i < lines.size(); i++) {
            String line = lines.get(i).strip();
            if (line.isEmpty() || line.startsWith("#")) continue;
            String comment = "";
            int dash = line.indexOf(" -- ");
            if (dash >= 0) {
                comment = line.substring(dash + 4).strip();
                line = line.substring(0, dash).strip();
            }
            String[] f = line.split("\\s+");
            String where = "wire.spec line " + (i + 1) + ": ";
            if (!PREFIXES.containsKey(f[0])) throw new IllegalArgumentException(where + "unknown kind '" + f[0] + "'");
            if (f.length != (f[0].equals("frame") ? 4 : 3)) throw new IllegalArgumentException(where + "expected KIND NAME VALUE"
                    + (f[0].equals("frame") ? " LIMIT" : ""));
            if (!f[1].matches("[A-Z][A-Z0-9_]*")) throw new IllegalArgumentException(where + "bad name '" + f[1] + "'");
            Long.decode(f[2]); // a number, decimal or 0x hex
            if (f[0].equals("frame") && !consts.containsKey(f[3])) {
                throw new IllegalArgumentException(where + "the limit " + f[3] + " is no const above");
            }
            if (f[0].equals("const") || f[0].equals("size")) consts.put(f[1], f[2]);
            out.add(new Entry(f[0], f[1], f[2], f[0].equals("frame") ? f[3] : null, comment));
        }
        return out;
    }

    private static String cName(Entry e) {
        return PREFIXES.get(e.kind())[0] + e.name();
    }

    private static String javaName(Entry e) {
        return PREFIXES.get(e.kind())[1] + e.name();
    }

    static String c(List<Entry> entries) {
        StringBuilder b = new StringBuilder("/* Generated from protocol/wire.spec by GenerateWire: do not edit. */\n"
                + "#ifndef VMC_WIRE_CONSTANTS_H\n#define VMC_WIRE_CONSTANTS_H\n\n#include <stdint.h>\n\n");
        for (String kind : List.of("const", "size", "flag", "error", "copy", "array")) {
            for (Entry e : entries) {
                if (!e.kind().equals(kind)) continue;
                b.append("#define ").append(cName(e)).append(' ').append(e.value()).append(kind.equals("size") ? "" : "u");
                if (!e.comment().isEmpty()) b.append(" /* ").append(e.comment()).append(" */");
                b.append('\n');
            }
            b.append('\n');
        }
        enumeration(b, entries, "frame", "vmc_frame_type");
        enumeration(b, entries, "role", "vmc_role");
        enumeration(b, entries, "status", "vmc_hello_status");
        b.append("/* Largest payload a frame of this type may carry; 0 for an unknown type. */\n"
                + "static inline uint32_t vmc_max_payload(uint16_t type) {\n    switch (type) {\n");
        for (Entry e : entries) {
            if (e.kind().equals("frame")) b.append("    case ").append(cName(e)).append(": return VMC_").append(e.limit()).append(";\n");
        }
        b.append("    default: return 0;\n    }\n}\n\n#endif\n");
        return b.toString();
    }

    private static void enumeration(StringBuilder b, List<Entry> entries, String kind, String type) {
        b.append("enum ").append(type).append(" {\n");
        for (Entry e : entries) {
            if (!e.kind().equals(kind)) continue;
            b.append("    ").append(cName(e)).append(" = ").append(e.value()).append(',');
            if (!e.comment().isEmpty()) b.append(" /* ").append(e.comment()).append(" */");
            b.append('\n');
        }
        b.append("};\n\n");
    }

    static String java(List<Entry> entries) {
        StringBuilder b = new StringBuilder("package io.vmcuda.protocol;\n\n"
                + "/** The wire protocol's constants (PROTOCOL.md). Generated from protocol/wire.spec by GenerateWire: do not edit. */\n"
                + "public final class Wire {\n    private Wire() {}\n\n");
        for (Entry e : entries) {
            if (!e.comment().isEmpty()) b.append("    /** ").append(e.comment()).append(" */\n");
            long v = Long.decode(e.value());
            b.append("    public static final int ").append(javaName(e)).append(" = ")
                    .append(v > Integer.MAX_VALUE ? "(int) " + e.value() + "L" : e.value()).append(";\n");
        }
        b.append("\n    /** Largest payload a frame of this type may carry, or -1 for an unknown type. */\n"
                + "    public static int maxPayload(int type) {\n        switch (type) {\n");
        for (Entry e : entries) {
            if (e.kind().equals("frame")) b.append("            case ").append(javaName(e)).append(": return ").append(e.limit()).append(";\n");
        }
        b.append("            default: return -1;\n        }\n    }\n}\n");
        return b.toString();
    }
}
