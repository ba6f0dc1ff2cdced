package io.vmcuda.appliance.wire;

/**
 * The peer broke PROTOCOL.md. The receiver answers with an ERROR frame carrying {@link #code()} and the
 * message, then closes the connection.
 */
public class ProtocolException extends RuntimeException {
    /** ERROR codes this daemon sends (the u32 code field; protocol/wire.spec). */
    public static final int BAD_MAGIC = io.vmcuda.protocol.Wire.ERROR_BAD_MAGIC;
    public static final int UNKNOWN_TYPE = io.vmcuda.protocol.Wire.ERROR_UNKNOWN_TYPE;
    public static final int TOO_LONG = io.vmcuda.protocol.Wire.ERROR_TOO_LONG;
    public static final int MALFORMED = io.vmcuda.protocol.Wire.ERROR_MALFORMED;
    public static final int UNEXPECTED = io.vmcuda.protocol.Wire.ERROR_UNEXPECTED;
    public static final int TIMEOUT = io.vmcuda.protocol.Wire.ERROR_TIMEOUT;
    public static final int TOO_MANY = io.vmcuda.protocol.Wire.ERROR_TOO_MANY;

    private final int code;

    public ProtocolException(int code, String message) {
        super(message, null, false, false);
        this.code = code;
    }

    public int code() {
        return code;
    }
}
