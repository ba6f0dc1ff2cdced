package io.vmcuda.appliance.wire;

/**
 * The peer broke PROTOCOL.md. The receiver answers with an ERROR frame carrying {@link #code()} and the
 * message, then closes the connection.
 */
public class ProtocolException extends RuntimeException {
    /** ERROR codes this daemon sends (the u32 code field). */
    public static final int BAD_MAGIC = 1;
    public static final int UNKNOWN_TYPE = 2;
    public static final int TOO_LONG = 3;
    public static final int MALFORMED = 4;
    public static final int UNEXPECTED = 5;
    /** The client did not send its HELLO (or its next BINARY_CHUNK) within control.handshake_timeout_s. */
    public static final int TIMEOUT = 6;
    /** Too many connections await their handshake (control.max_handshakes, control.max_handshakes_per_source). */
    public static final int TOO_MANY = 7;

    private final int code;

    public ProtocolException(int code, String message) {
        super(message, null, false, false);
        this.code = code;
    }

    public int code() {
        return code;
    }
}
