package io.vmcuda.appliance.pool;

import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.PropertyNamingStrategies;
import io.etcd.jetcd.ByteSequence;
import java.io.IOException;

/** The pool's JSON values: snake_case, and fields a later version adds are ignored, not fatal. */
final class PoolJson {
    private static final ObjectMapper MAPPER = new ObjectMapper()
            .setPropertyNamingStrategy(PropertyNamingStrategies.SNAKE_CASE)
            .configure(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES, false);

    private PoolJson() {}

    static ByteSequence write(Object value) {
        try {
            return ByteSequence.from(MAPPER.writeValueAsBytes(value));
        } catch (IOException e) {
            throw new IllegalStateException("cannot write " + value.getClass().getSimpleName() + " as JSON", e);
        }
    }

    /** The value, or null when it is not a JSON document of that shape (logged by the caller). */
    static <T> T read(ByteSequence bytes, Class<T> type) {
        try {
            return MAPPER.readValue(bytes.getBytes(), type);
        } catch (IOException e) {
            return null;
        }
    }
}
