package io.vmcuda.appliance.pool;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import io.etcd.jetcd.ByteSequence;
import io.vmcuda.appliance.JsonWriter;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * The pool's JSON values ({@link ApplianceRecord}, {@link TicketRecord}), field by field through Jackson's streaming
 * parser and generator: snake_case keys in the records' component order, every field written (null too); on reading,
 * fields a later version adds are ignored, not fatal, and a missing one is null (0, false) as before, when Jackson's
 * data binding did this. The keys are the pool's format, read by every appliance of the pool and by
 * {@code vmcuda cluster} (jq): a renamed record component must not rename them.
 */
final class PoolJson {
    private static final JsonFactory FACTORY = new JsonFactory();

    private PoolJson() {}

    static ByteSequence write(ApplianceRecord r) {
        JsonWriter w = new JsonWriter().beginObject()
                .field("name", r.name()).field("endpoint", r.endpoint()).field("version", r.version());
        strings(w.name("shm_hosts"), r.shmHosts());
        w.field("slots_per_gpu", r.slotsPerGpu()).field("sessions", r.sessions()).name("draining").value(r.draining())
                .field("updated_ms", r.updatedMs()).field("no_gpu_reason", r.noGpuReason()).name("gpus");
        if (r.gpus() == null) {
            w.nullValue();
        } else {
            w.beginArray();
            for (ApplianceRecord.Gpu g : r.gpus()) {
                if (g == null) {
                    w.nullValue();
                    continue;
                }
                w.beginObject().field("index", g.index()).field("uuid", g.uuid()).field("name", g.name())
                        .field("memory_total", g.memoryTotal()).field("compute_capability", g.computeCapability())
                        .field("sessions", g.sessions()).field("memory_used", g.memoryUsed())
                        .field("utilization", g.utilization()).endObject();
            }
            w.endArray();
        }
        return bytes(w.endObject());
    }

    static ByteSequence write(TicketRecord t) {
        JsonWriter w = new JsonWriter().beginObject().field("appliance", t.appliance());
        strings(w.name("gpus"), t.gpus());
        return bytes(w.field("tenant", t.tenant()).field("created_ms", t.createdMs()).endObject());
    }

    /** The registration, or null when it is not a JSON document of that shape (logged by the caller). */
    static ApplianceRecord readAppliance(ByteSequence bytes) {
        try (JsonParser p = FACTORY.createParser(bytes.getBytes())) {
            p.nextToken();
            return appliance(p);
        } catch (IOException | RuntimeException e) { // not JSON, or a value of the wrong kind
            return null;
        }
    }

    /** The ticket, or null when it is not a JSON document of that shape. */
    static TicketRecord readTicket(ByteSequence bytes) {
        try (JsonParser p = FACTORY.createParser(bytes.getBytes())) {
            p.nextToken();
            String appliance = null, tenant = null;
            List<String> gpus = null;
            long createdMs = 0;
            startObject(p);
            while (p.nextToken() == JsonToken.FIELD_NAME) {
                String field = p.currentName();
                p.nextToken();
                switch (field) {
                    case "appliance" -> appliance = string(p);
                    case "gpus" -> gpus = strings(p);
                    case "tenant" -> tenant = string(p);
                    case "created_ms" -> createdMs = number(p);
                    default -> p.skipChildren();
                }
            }
            return new TicketRecord(appliance, gpus, tenant, createdMs);
        } catch (IOException | RuntimeException e) {
            return null;
        }
    }

    private static ApplianceRecord appliance(JsonParser p) throws IOException {
        String name = null, endpoint = null, version = null, noGpuReason = null;
        List<String> shmHosts = null;
        int slotsPerGpu = 0, sessions = 0;
        boolean draining = false;
        long updatedMs = 0;
        List<ApplianceRecord.Gpu> gpus = null;
        startObject(p);
        while (p.nextToken() == JsonToken.FIELD_NAME) {
            String field = p.currentName();
            p.nextToken();
            switch (field) {
                case "name" -> name = string(p);
                case "endpoint" -> endpoint = string(p);
                case "version" -> version = string(p);
                case "shm_hosts" -> shmHosts = strings(p);
                case "slots_per_gpu" -> slotsPerGpu = Math.toIntExact(number(p));
                case "sessions" -> sessions = Math.toIntExact(number(p));
                case "draining" -> draining = bool(p);
                case "updated_ms" -> updatedMs = number(p);
                case "no_gpu_reason" -> noGpuReason = string(p);
                case "gpus" -> gpus = gpus(p);
                default -> p.skipChildren();
            }
        }
        return new ApplianceRecord(name, endpoint, version, shmHosts, slotsPerGpu, sessions, draining, updatedMs,
                noGpuReason, gpus);
    }

    private static List<ApplianceRecord.Gpu> gpus(JsonParser p) throws IOException {
        if (p.currentToken() == JsonToken.VALUE_NULL) return null;
        if (p.currentToken() != JsonToken.START_ARRAY) throw new IOException("not an array");
        List<ApplianceRecord.Gpu> gpus = new ArrayList<>();
        while (p.nextToken() != JsonToken.END_ARRAY) {
            if (p.currentToken() == JsonToken.VALUE_NULL) {
                gpus.add(null);
                continue;
            }
            int index = 0, sessions = 0, utilization = 0;
            String uuid = null, name = null, computeCapability = null;
            long memoryTotal = 0, memoryUsed = 0;
            startObject(p);
            while (p.nextToken() == JsonToken.FIELD_NAME) {
                String field = p.currentName();
                p.nextToken();
                switch (field) {
                    case "index" -> index = Math.toIntExact(number(p));
                    case "uuid" -> uuid = string(p);
                    case "name" -> name = string(p);
                    case "memory_total" -> memoryTotal = number(p);
                    case "compute_capability" -> computeCapability = string(p);
                    case "sessions" -> sessions = Math.toIntExact(number(p));
                    case "memory_used" -> memoryUsed = number(p);
                    case "utilization" -> utilization = Math.toIntExact(number(p));
                    default -> p.skipChildren();
                }
            }
            gpus.add(new ApplianceRecord.Gpu(index, uuid, name, memoryTotal, computeCapability, sessions, memoryUsed,
                    utilization));
        }
        return gpus;
    }

    private static void startObject(JsonParser p) throws IOException {
        if (p.currentToken() != JsonToken.START_OBJECT) throw new IOException("not an object");
    }

    /** A string, or a number or boolean as its text (as data binding took them); null for null. */
    private static String string(JsonParser p) throws IOException {
        if (p.currentToken() == JsonToken.VALUE_NULL) return null;
        if (!p.currentToken().isScalarValue()) throw new IOException("not a string");
        return p.getText();
    }

    /** A whole number; a fraction is cut, a numeric string is read (as data binding did); null is 0. */
    private static long number(JsonParser p) throws IOException {
        return switch (p.currentToken()) {
            case VALUE_NUMBER_INT, VALUE_NUMBER_FLOAT -> p.getLongValue();
            case VALUE_STRING -> Long.parseLong(p.getText().trim());
            case VALUE_NULL -> 0;
            default -> throw new IOException("not a number");
        };
    }

    private static boolean bool(JsonParser p) throws IOException {
        return switch (p.currentToken()) {
            case VALUE_TRUE -> true;
            case VALUE_FALSE, VALUE_NULL -> false;
            default -> throw new IOException("not a boolean");
        };
    }

    private static List<String> strings(JsonParser p) throws IOException {
        if (p.currentToken() == JsonToken.VALUE_NULL) return null;
        if (p.currentToken() != JsonToken.START_ARRAY) throw new IOException("not an array");
        List<String> list = new ArrayList<>();
        while (p.nextToken() != JsonToken.END_ARRAY) list.add(string(p));
        return list;
    }

    private static void strings(JsonWriter w, List<String> list) {
        if (list == null) {
            w.nullValue();
            return;
        }
        w.beginArray();
        for (String s : list) w.value(s);
        w.endArray();
    }

    private static ByteSequence bytes(JsonWriter w) {
        return ByteSequence.from(w.toString(), StandardCharsets.UTF_8);
    }
}
