package io.vmcuda.appliance.pool;

import io.etcd.jetcd.ByteSequence;
import java.nio.charset.StandardCharsets;

/**
 * The pool's keys in etcd under its prefix (PROTOCOL.md "Placement in a pool"):
 * {@code appliances/NAME} its registration (JSON, under its lease), {@code entry/HOST:PORT} the endpoints
 * clients may ask for a placement (under the same lease; the client lists these keys only),
 * {@code tickets/ID} slots promised to clients on their way (under a lease of cluster.ticket_ttl_s), and
 * {@code claims}, whose revision orders placements: each placement's transaction requires it unchanged
 * since the placement read the pool and changes it, and so does every registration that changes a load.
 */
record PoolKeys(String prefix) {
    ByteSequence appliances() {
        return key("appliances/");
    }

    ByteSequence appliance(String name) {
        return key("appliances/" + name);
    }

    ByteSequence entries() {
        return key("entry/");
    }

    ByteSequence entry(String endpoint) {
        return key("entry/" + endpoint);
    }

    ByteSequence tickets() {
        return key("tickets/");
    }

    ByteSequence ticket(long id) {
        return key("tickets/" + Long.toUnsignedString(id));
    }

    ByteSequence claims() {
        return key("claims");
    }

    private ByteSequence key(String rest) {
        return ByteSequence.from(prefix + rest, StandardCharsets.UTF_8);
    }
}
