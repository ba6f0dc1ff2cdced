package io.vmcuda.appliance;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import java.io.IOException;
import java.io.StringWriter;
import java.io.UncheckedIOException;

/**
 * One small JSON document (/status, a sessions.jsonl record), written in order through Jackson's streaming
 * generator: separators, escaping and the nesting checks are Jackson's. This class only gives the documents a
 * fluent form that reads like what they contain, and writes a non-finite number as null.
 */
public final class JsonWriter {
    private static final JsonFactory FACTORY = new JsonFactory();

    private final StringWriter out = new StringWriter(256);
    private final JsonGenerator g;

    public JsonWriter() {
        try {
            g = FACTORY.createGenerator(out);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private interface Step {
        void run() throws IOException;
    }

    /** A StringWriter does not fail; a misnested document does (Jackson's JsonGenerationException). */
    private JsonWriter step(Step s) {
        try {
            s.run();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return this;
    }

    public JsonWriter beginObject() {
        return step(g::writeStartObject);
    }

    public JsonWriter endObject() {
        return step(g::writeEndObject);
    }

    public JsonWriter beginArray() {
        return step(g::writeStartArray);
    }

    public JsonWriter endArray() {
        return step(g::writeEndArray);
    }

    public JsonWriter name(String name) {
        return step(() -> g.writeFieldName(name));
    }

    public JsonWriter value(String s) {
        return step(() -> g.writeString(s)); // null writes null
    }

    public JsonWriter value(long n) {
        return step(() -> g.writeNumber(n));
    }

    public JsonWriter value(double d) {
        return step(() -> {
            if (Double.isFinite(d)) g.writeNumber(d);
            else g.writeNull();
        });
    }

    public JsonWriter value(boolean b) {
        return step(() -> g.writeBoolean(b));
    }

    public JsonWriter nullValue() {
        return step(g::writeNull);
    }

    public JsonWriter field(String name, String v) {
        return name(name).value(v);
    }

    public JsonWriter field(String name, long v) {
        return name(name).value(v);
    }

    /** The document; the generator is closed (its buffers go back to Jackson), so nothing more can be written. */
    @Override
    public String toString() {
        step(g::close);
        return out.toString();
    }
}
