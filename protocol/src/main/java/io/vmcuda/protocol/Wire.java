package io.vmcuda.protocol;

/**
 * Java view of protocol/PROTOCOL.md: frame layout, frame types, limits and HELLO constants.
 * The C view is protocol/include/vmc_wire.h; keep both in step with the document.
 */
public final class Wire {
    private Wire() {}

    public static final int PROTO_VERSION = 4;
    /** HELLO's visible_len when the client has no CUDA_VISIBLE_DEVICES (protocol 3). */
    public static final int VISIBLE_UNSET = 0xFFFF;
    /** The longest CUDA_VISIBLE_DEVICES a HELLO carries. */
    public static final int VISIBLE_MAX_BYTES = 1024;
    /** The bytes 'V' 'M' 'C' '1' read as a little-endian u32. */
    public static final int MAGIC = 0x31434D56;
    public static final int HEADER_BYTES = 16;
    /** Offset and width of the little-endian payload length inside the header. */
    public static final int LENGTH_FIELD_OFFSET = 12;
    public static final int LENGTH_FIELD_BYTES = 4;

    public static final int TYPE_HELLO = 1;
    public static final int TYPE_HELLO_REPLY = 2;
    public static final int TYPE_BINARY_CHUNK = 3;
    public static final int TYPE_MANIFEST = 4;
    public static final int TYPE_CALL = 5;
    public static final int TYPE_REPLY = 6;
    public static final int TYPE_OUTPUT = 7;
    public static final int TYPE_ERROR = 8;
    /** daemon → client, first frame on the control port: the nonce HELLO's proof covers. */
    public static final int TYPE_CHALLENGE = 9;
    /** client → daemon, after NEED_LIBRARIES: name, size and SHA-256 of each library asked for. */
    public static final int TYPE_LIBRARIES = 10;

    public static final int FLAG_ASYNC = 1;
    /** CALL: the payload starts with the call's u64 number in its process's order of sending. */
    public static final int FLAG_ORDERED = 2;

    public static final int MAX_CONTROL_PAYLOAD = 64 * 1024;
    public static final int MAX_BINARY_CHUNK = 4 * 1024 * 1024;
    public static final int MAX_CALL_PAYLOAD = 1024 * 1024;

    public static final int ROLE_NEW = 0;
    public static final int ROLE_JOIN = 1;
    /** Asks an appliance of a pool where to open the session (PROTOCOL.md "Placement in a pool", protocol 4). */
    public static final int ROLE_PLACE = 2;
    /** Asks for the tenant's view of the appliance (`vmcuda smi`): GPUs and its own sessions, as text in INFO. */
    public static final int ROLE_INFO = 3;

    public static final int HELLO_READY = 0;
    public static final int HELLO_SEND_BINARY = 1;
    public static final int HELLO_REFUSED = 2;
    /** The answer to ROLE_PLACE: session_id is the placement ticket, msg the appliance's HOST:PORT. */
    public static final int HELLO_PLACED = 3;
    /** The answer to ROLE_INFO: msg is the tenant's view of the appliance (several lines of text). */
    public static final int HELLO_INFO = 4;
    /** NEW: the shipped program needs shared libraries the appliance lacks; msg names them, one per line. */
    public static final int HELLO_NEED_LIBRARIES = 5;
    /** NEW: send the bytes of these libraries (msg: names, one per line, in the order of the LIBRARIES frame). */
    public static final int HELLO_SEND_LIBRARIES = 6;
    public static final int MAX_CLIENT_LIBRARIES = 64;

    public static final int SHA256_BYTES = 32;
    public static final int SESSION_KEY_BYTES = 32;
    /** CHALLENGE nonce and HELLO proof (HMAC-SHA256). */
    public static final int CHALLENGE_BYTES = 32;
    public static final int PROOF_BYTES = 32;

    /** Largest payload a frame of this type may carry, or -1 for an unknown type. */
    public static int maxPayload(int type) {
        switch (type) {
            case TYPE_HELLO: case TYPE_HELLO_REPLY: case TYPE_MANIFEST: case TYPE_ERROR: case TYPE_CHALLENGE: case TYPE_LIBRARIES:
                return MAX_CONTROL_PAYLOAD;
            case TYPE_BINARY_CHUNK:
                return MAX_BINARY_CHUNK;
            case TYPE_CALL: case TYPE_REPLY: case TYPE_OUTPUT:
                return MAX_CALL_PAYLOAD;
            default:
                return -1;
        }
    }
}
