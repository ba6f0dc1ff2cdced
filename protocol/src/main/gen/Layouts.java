import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The typed wire forms of internal operations, shared by both spec generators: `layout NAME(FIELD, ...)` lines
 * and the `NAME(ARGS) -> REPLY` form of an internal entry that names them. A field is
 * <ul>
 * <li>{@code uintN_t NAME}: an unsigned integer, little-endian;</li>
 * <li>{@code TYPE NAME}: a C type of NVIDIA's headers (a struct such as CUDA_MEMCPY3D), its bytes as they are;</li>
 * <li>{@code TYPE NAME[K]}: K elements, K a number;</li>
 * <li>{@code TYPE NAME[COUNT]}: as many elements as the earlier integer field COUNT says (uint8_t to uint32_t);</li>
 * <li>{@code LAYOUT NAME}: a layout declared earlier, in place;</li>
 * <li>{@code LAYOUT NAME[COUNT]}: COUNT of them; a reader sets {@code NAME} to room for {@code NAME_room} before it
 * reads, and a frame with more marks the input bad.</li>
 * </ul>
 * A {@code wire SYMBOL(ARGS) -> REPLY} line names the layouts of a hand-written exported function whose wire form
 * is not the generated one (cuda-driver.spec).
 * The C output is a struct per layout with a writer ({@code vmc_put_NAME}) and a reader ({@code vmc_get_NAME}) on
 * the frame codec of vmc_io.h, which the client and the worker both use, so neither codes a layout by hand. A
 * counted array is a pointer: to the writer's elements, or, after reading, to their bytes inside the frame
 * (valid while the frame is; {@code vmc_NAME_FIELD_at} reads element i of an integer array). A reader that runs
 * out of bytes marks its input bad (vmc_in.bad); it checks no value, which is the reader's caller's job.
 * Java reads none of these operations (the daemon never sees calls), so only C is generated.
 */
final class Layouts {
    private Layouts() {}

    static final Map<String, String> INTEGERS = Map.of("uint8_t", "u8", "uint16_t", "u16", "uint32_t", "u32", "uint64_t", "u64");
    private static final Map<String, Integer> WIDTH = Map.of("uint8_t", 1, "uint16_t", 2, "uint32_t", 4, "uint64_t", 8);

    /** {@code count}: null for one value, digits for a fixed array, a field's name for a counted one. */
    record Field(String type, String name, String count, boolean nested) {
        boolean integer() { return INTEGERS.containsKey(type); }
        boolean fixed() { return count != null && count.matches("\\d+"); }
        boolean counted() { return count != null && !fixed(); }
        String elementSize() { return integer() ? String.valueOf(WIDTH.get(type)) : "sizeof(" + type + ")"; }
    }

    record Layout(String name, List<Field> fields, int line) {}

    /** What an internal entry names: its arguments' layout and its reply's (either may be null). */
    record Uses(String operation, String args, String reply) {}

    private static final Pattern LAYOUT = Pattern.compile("^layout\\s+(\\w+)\\s*\\((.*)\\)$");
    private static final Pattern FIELD = Pattern.compile("^([A-Za-z_]\\w*)\\s+([A-Za-z_]\\w*)\\s*(?:\\[\\s*(\\w+)\\s*\\])?$");
    private static final Pattern USES = Pattern.compile("^(\\w+)\\s*\\(\\s*(\\w*)\\s*\\)\\s*(?:->\\s*(\\w+))?$");
    private static final Set<String> C_KEYWORDS = Set.of("auto", "break", "case", "char", "const", "continue", "default",
            "do", "double", "else", "enum", "extern", "float", "for", "goto", "if", "inline", "int", "long", "register",
            "restrict", "return", "short", "signed", "sizeof", "static", "struct", "switch", "typedef", "union",
            "unsigned", "void", "volatile", "while");

    static boolean isLayoutLine(String raw) { return raw.startsWith("layout ") || raw.startsWith("layout\t"); }

    static boolean isWireLine(String raw) { return raw.startsWith("wire ") || raw.startsWith("wire\t"); }

    /** {@code wire SYMBOL(ARGS) -> REPLY}: the layouts of a hand-written exported function's wire form. */
    static Uses parseWire(String raw, int line, Map<String, Layout> declared) {
        Uses u = parseUses(raw.substring(4), line, declared);
        if (u == null) throw new IllegalArgumentException("line " + line + ": expected wire SYMBOL(ARGS) -> REPLY");
        return u;
    }

    /** Parses a {@code layout} line into {@code into}, refusing a name used before. */
    static void parseLine(String raw, int line, Map<String, Layout> into) {
        Matcher m = LAYOUT.matcher(raw);
        if (!m.matches()) throw new IllegalArgumentException("line " + line + ": expected layout NAME(TYPE FIELD, ...)");
        String name = m.group(1);
        List<Field> fields = new ArrayList<>();
        Map<String, Field> byName = new LinkedHashMap<>();
        if (!m.group(2).isBlank())
            for (String text : m.group(2).split(",", -1)) {
                Matcher f = FIELD.matcher(text.strip());
                if (!f.matches()) throw new IllegalArgumentException("line " + line + ": layout " + name + ": cannot read field '" + text.strip() + "'");
                Field field = new Field(f.group(1), f.group(2), f.group(3), into.containsKey(f.group(1)));
                if (field.nested() && field.fixed())
                    throw new IllegalArgumentException("line " + line + ": layout " + name + "(" + field.name()
                            + "): an array of layouts is counted by a field");
                if (C_KEYWORDS.contains(field.name()) || byName.containsKey(field.name()))
                    throw new IllegalArgumentException("line " + line + ": layout " + name + ": field name '" + field.name()
                            + "' is a C keyword, or is used twice");
                if (field.counted()) {
                    Field n = byName.get(field.count());
                    if (n == null || !n.integer() || n.count() != null || n.type().equals("uint64_t"))
                        throw new IllegalArgumentException("line " + line + ": layout " + name + "(" + field.name() + "): its count "
                                + field.count() + " must be an earlier uint8_t..uint32_t field");
                }
                fields.add(field);
                byName.put(field.name(), field);
            }
        if (into.put(name, new Layout(name, List.copyOf(fields), line)) != null)
            throw new IllegalArgumentException("line " + line + ": duplicate layout " + name);
    }

    /** {@code NAME(ARGS) -> REPLY}, {@code NAME() -> REPLY}, {@code NAME(ARGS)}; null when text is a bare name. */
    static Uses parseUses(String text, int line, Map<String, Layout> declared) {
        Matcher m = USES.matcher(text.strip());
        if (!m.matches()) return null;
        String args = m.group(2).isEmpty() ? null : m.group(2), reply = m.group(3);
        for (String l : new String[] {args, reply})
            if (l != null && !declared.containsKey(l))
                throw new IllegalArgumentException("line " + line + ": " + m.group(1) + " names layout '" + l
                        + "', which is not declared above it");
        return new Uses(m.group(1), args, reply);
    }

    /** The C header: one struct, writer and reader per layout; {@code includes} are lines the struct types need. */
    static String header(String banner, String guard, String includes, List<Layout> layouts, List<Uses> uses) {
        StringBuilder s = new StringBuilder(banner);
        s.append("/* The typed wire forms of the internal operations (`layout` lines of the spec), written and read with the\n")
         .append(" * same code by the client and the worker (protocol/src/main/gen/Layouts.java says what each field kind becomes). */\n")
         .append("#ifndef ").append(guard).append("\n#define ").append(guard).append("\n\n#include <stdint.h>\n#include <stddef.h>\n")
         .append(includes).append("#include \"vmc_io.h\"\n\n")
         .append("/* a counted array's bytes are its count (at most 2^32 - 1) times its element size: no overflow in 64 bits */\n")
         .append("_Static_assert(sizeof(size_t) >= 8, \"the layouts' readers need a 64-bit size_t\");\n");
        for (Layout l : layouts) {
            List<String> users = new ArrayList<>();
            for (Uses u : uses) {
                if (l.name().equals(u.args())) users.add(u.operation() + " (arguments)");
                if (l.name().equals(u.reply())) users.add(u.operation() + " (reply)");
            }
            String t = "struct vmc_" + l.name();
            s.append("\n/* ").append(l.name()).append(": ").append(users.isEmpty() ? "(no operation)" : String.join(", ", users)).append(" */\n");
            s.append(t).append(" {\n");
            if (l.fields().isEmpty()) s.append("    char empty; /* C wants a member */\n");
            for (Field f : l.fields()) {
                if (f.nested() && f.counted())
                    s.append("    struct vmc_").append(f.type()).append(" *").append(f.name()).append("; /* ").append(f.count())
                     .append(" of them */\n    uint32_t ").append(f.name()).append("_room; /* reading: what ").append(f.name())
                     .append(" has room for */\n");
                else if (f.nested()) s.append("    struct vmc_").append(f.type()).append(' ').append(f.name()).append(";\n");
                else if (f.counted()) s.append("    const void *").append(f.name()).append("; /* ").append(f.count()).append(" x ").append(f.type()).append(" */\n");
                else s.append("    ").append(f.type()).append(' ').append(f.name()).append(f.fixed() ? "[" + f.count() + "]" : "").append(";\n");
            }
            s.append("};\n\nstatic inline void vmc_put_").append(l.name()).append("(struct vmc_out *o, const ").append(t).append(" *a) {\n");
            if (l.fields().isEmpty()) s.append("    (void)o;\n    (void)a;\n");
            for (Field f : l.fields()) s.append(put(f));
            s.append("}\n\nstatic inline void vmc_get_").append(l.name()).append("(struct vmc_in *in, ").append(t).append(" *a) {\n");
            if (l.fields().isEmpty()) s.append("    (void)in;\n    (void)a;\n");
            for (Field f : l.fields()) s.append(get(f));
            s.append("}\n");
            for (Field f : l.fields())
                if (f.counted() && f.integer() && !f.type().equals("uint8_t")) s.append(elementReader(l, f));
        }
        s.append("\n#endif\n");
        return s.toString();
    }

    private static String put(Field f) {
        String a = "a->" + f.name();
        if (f.nested() && f.counted())
            return "    for (size_t i = 0; i < (size_t)a->" + f.count() + "; i++)\n        vmc_put_" + f.type() + "(o, &" + a + "[i]);\n";
        if (f.nested()) return "    vmc_put_" + f.type() + "(o, &" + a + ");\n";
        if (f.count() == null)
            return f.integer() ? "    vmc_out_" + INTEGERS.get(f.type()) + "(o, " + a + ");\n"
                               : "    vmc_out_bytes(o, &" + a + ", sizeof " + a + ");\n";
        String n = f.fixed() ? f.count() : "(size_t)a->" + f.count();
        if (!f.integer() || f.type().equals("uint8_t"))
            return "    vmc_out_bytes(o, " + a + ", " + n + " * " + f.elementSize() + ");\n";
        return "    for (size_t i = 0; i < " + n + "; i++)\n        vmc_out_" + INTEGERS.get(f.type()) + "(o, ((const " + f.type()
                + " *)" + a + ")[i]);\n";
    }

    private static String get(Field f) {
        String a = "a->" + f.name();
        if (f.nested() && f.counted())
            return "    if (a->" + f.count() + " > a->" + f.name() + "_room)\n        in->bad = 1;\n    for (size_t i = 0; !in->bad && i < (size_t)a->"
                    + f.count() + "; i++)\n        vmc_get_" + f.type() + "(in, &" + a + "[i]);\n";
        if (f.nested()) return "    vmc_get_" + f.type() + "(in, &" + a + ");\n";
        if (f.count() == null)
            return f.integer() ? "    " + a + " = vmc_in_" + INTEGERS.get(f.type()) + "(in);\n"
                               : "    vmc_in_bytes(in, &" + a + ", sizeof " + a + ");\n";
        if (f.fixed())
            return f.type().equals("uint8_t") || !f.integer() ? "    vmc_in_bytes(in, " + a + ", sizeof " + a + ");\n"
                    : "    for (size_t i = 0; i < " + f.count() + "; i++)\n        " + a + "[i] = vmc_in_" + INTEGERS.get(f.type()) + "(in);\n";
        return "    " + a + " = vmc_in_view(in, (size_t)a->" + f.count() + " * " + f.elementSize() + ");\n";
    }

    /** Element i of a counted integer array as read from a frame (its bytes are little-endian and unaligned); valid
     *  only after a read that left the input good, for i below the count. */
    private static String elementReader(Layout l, Field f) {
        int w = WIDTH.get(f.type());
        return "\n/* element i of " + l.name() + "." + f.name() + " as read (i < " + f.count() + ") */\n"
                + "static inline " + f.type() + " vmc_" + l.name() + "_" + f.name() + "_at(const struct vmc_" + l.name()
                + " *a, size_t i) {\n    const uint8_t *p = (const uint8_t *)a->" + f.name() + " + i * " + w + ";\n    "
                + f.type() + " v = 0;\n    for (int k = " + (w - 1) + "; k >= 0; k--)\n        v = (" + f.type() + ")((v << 8) | p[k]);\n"
                + "    return v;\n}\n";
    }

    /** Names of layouts no operation uses: a spec that declares one has a mistake. */
    static Set<String> unused(List<Layout> layouts, List<Uses> uses) {
        Set<String> used = new HashSet<>();
        for (Uses u : uses) {
            if (u.args() != null) used.add(u.args());
            if (u.reply() != null) used.add(u.reply());
        }
        for (Layout l : layouts) for (Field f : l.fields()) if (f.nested()) used.add(f.type());
        Set<String> out = new HashSet<>();
        for (Layout l : layouts) if (!used.contains(l.name())) out.add(l.name());
        return out;
    }
}
