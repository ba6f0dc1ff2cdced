package io.vmcuda.appliance.wire;

import io.vmcuda.protocol.Wire;

/** HELLO_REPLY fields (PROTOCOL.md "Session setup" step 2). */
public record HelloReply(int status, long sessionId, byte[] sessionKey, int gpuCount, String message) {
    private static final byte[] NO_KEY = new byte[Wire.SESSION_KEY_BYTES];

    public static HelloReply sendBinary() {
        return new HelloReply(Wire.HELLO_SEND_BINARY, 0, NO_KEY, 0, "");
    }

    public static HelloReply refused(String why) {
        return new HelloReply(Wire.HELLO_REFUSED, 0, NO_KEY, 0, oneLine(why));
    }

    public static HelloReply ready(long sessionId, byte[] key, int gpuCount, String message) {
        return new HelloReply(Wire.HELLO_READY, sessionId, key, gpuCount, message);
    }

    /** The answer to a placement question: open the session at {@code endpoint}, presenting {@code ticket}. */
    public static HelloReply placed(long ticket, int gpuCount, String endpoint) {
        return new HelloReply(Wire.HELLO_PLACED, ticket, NO_KEY, gpuCount, endpoint);
    }

    /** The client prints REFUSED messages as one line. */
    static String oneLine(String s) {
        return s == null ? "" : s.replaceAll("[\\r\\n]+", " ").strip();
    }
}
