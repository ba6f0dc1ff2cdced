package io.vmcuda.appliance.wire;

import io.vmcuda.protocol.Wire;

/**
 * HELLO_REPLY fields (PROTOCOL.md "Session setup" step 2); {@code linkKey}: on a TLS connection's READY, the key of
 * its TLS link to the worker (PROTOCOL.md "Encryption"), else null.
 */
public record HelloReply(int status, long sessionId, byte[] sessionKey, int gpuCount, String message, byte[] linkKey) {
    public HelloReply(int status, long sessionId, byte[] sessionKey, int gpuCount, String message) {
        this(status, sessionId, sessionKey, gpuCount, message, null);
    }

    private static final byte[] NO_KEY = new byte[Wire.SESSION_KEY_BYTES];

    public static HelloReply sendBinary() {
        return new HelloReply(Wire.HELLO_SEND_BINARY, 0, NO_KEY, 0, "");
    }

    /** The shipped program needs these shared libraries, which the appliance lacks (PROTOCOL.md "Client libraries"). */
    public static HelloReply needLibraries(java.util.List<String> names) {
        return new HelloReply(Wire.HELLO_NEED_LIBRARIES, 0, NO_KEY, 0, String.join("\n", names));
    }

    /** Send the bytes of these libraries, in this order. */
    public static HelloReply sendLibraries(java.util.List<String> names) {
        return new HelloReply(Wire.HELLO_SEND_LIBRARIES, 0, NO_KEY, 0, String.join("\n", names));
    }

    public static HelloReply refused(String why) {
        return new HelloReply(Wire.HELLO_REFUSED, 0, NO_KEY, 0, oneLine(why));
    }

    public static HelloReply ready(long sessionId, byte[] key, int gpuCount, String message, byte[] linkKey) {
        return new HelloReply(Wire.HELLO_READY, sessionId, key, gpuCount, message, linkKey);
    }

    /** The answer to a placement question: open the session at {@code endpoint}, presenting {@code ticket}. */
    public static HelloReply placed(long ticket, int gpuCount, String endpoint) {
        return new HelloReply(Wire.HELLO_PLACED, ticket, NO_KEY, gpuCount, endpoint);
    }

    /** The answer to an INFO HELLO: the tenant's view of the appliance, cut to what the frame's u16 length holds. */
    public static HelloReply info(String text) {
        String t = text;
        while (t.getBytes(java.nio.charset.StandardCharsets.UTF_8).length > 60000) t = t.substring(0, t.length() / 2) + "\n...\n";
        return new HelloReply(Wire.HELLO_INFO, 0, NO_KEY, 0, t);
    }

    /** The client prints REFUSED messages as one line. */
    static String oneLine(String s) {
        return s == null ? "" : s.replaceAll("[\\r\\n]+", " ").strip();
    }
}
