package io.vmcuda.appliance;

import java.util.ArrayDeque;
import java.util.Deque;

/**
 * A minimal streaming JSON writer for /status and sessions.jsonl (a JSON library would be a large
 * dependency for two small documents). Handles commas and string escaping; the caller nests correctly.
 */
public final class JsonWriter {
    private final StringBuilder out = new StringBuilder(256);
    /** Per open container: has it had an element yet? */
    private final Deque<Boolean> hasElement = new ArrayDeque<>();
    private boolean afterName;

    public JsonWriter beginObject() {
        separate();
        out.append('{');
        hasElement.push(false);
        return this;
    }

    public JsonWriter endObject() {
        hasElement.pop();
        out.append('}');
        return this;
    }

    public JsonWriter beginArray() {
        separate();
        out.append('[');
        hasElement.push(false);
        return this;
    }

    public JsonWriter endArray() {
        hasElement.pop();
        out.append(']');
        return this;
    }

    public JsonWriter name(String name) {
        separate();
        quote(name);
        out.append(':');
        afterName = true;
        return this;
    }

    public JsonWriter value(String s) {
        separate();
        if (s == null) out.append("null");
        else quote(s);
        return this;
    }

    public JsonWriter value(long n) {
        separate();
        out.append(n);
        return this;
    }

    public JsonWriter value(double d) {
        separate();
        out.append(Double.isFinite(d) ? Double.toString(d) : "null");
        return this;
    }

    public JsonWriter value(boolean b) {
        separate();
        out.append(b);
        return this;
    }

    public JsonWriter nullValue() {
        separate();
        out.append("null");
        return this;
    }

    public JsonWriter field(String name, String v) {
        return name(name).value(v);
    }

    public JsonWriter field(String name, long v) {
        return name(name).value(v);
    }

    @Override
    public String toString() {
        return out.toString();
    }

    private void separate() {
        if (afterName) {
            afterName = false;
            return;
        }
        if (!hasElement.isEmpty()) {
            if (hasElement.peek()) out.append(',');
            hasElement.pop();
            hasElement.push(true);
        }
    }

    private void quote(String s) {
        out.append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"': out.append("\\\""); break;
                case '\\': out.append("\\\\"); break;
                case '\n': out.append("\\n"); break;
                case '\r': out.append("\\r"); break;
                case '\t': out.append("\\t"); break;
                default:
                    if (c < 0x20) out.append(String.format("\\u%04x", (int) c));
                    else out.append(c);
            }
        }
        out.append('"');
    }
}
