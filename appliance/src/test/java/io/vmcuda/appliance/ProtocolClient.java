package io.vmcuda.appliance;

import io.vmcuda.protocol.Wire;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;

/** A test client speaking PROTOCOL.md over a plain socket, written independently of the daemon's codec. */
final class ProtocolClient implements AutoCloseable {
    final Socket socket;
    private final DataInputStream in;
    private final OutputStream out;

    /** This connection's CHALLENGE nonce (the daemon's first frame), or null when it closed at once. */
    final byte[] challenge;
    /** What the daemon sent instead of a CHALLENGE (ERROR: too many handshakes), or null. */
    final Frame openingRefusal;

    ProtocolClient(InetSocketAddress daemon) throws IOException {
        this(daemon, null);
    }

    /** @param from the local address to connect from (another loopback address), or null */
    ProtocolClient(InetSocketAddress daemon, java.net.InetAddress from) throws IOException {
        socket = from == null ? new Socket(daemon.getAddress(), daemon.getPort())
                : new Socket(daemon.getAddress(), daemon.getPort(), from, 0);
        in = new DataInputStream(socket.getInputStream());
        out = socket.getOutputStream();
        Frame first = readFrame();
        challenge = first != null && first.type() == Wire.TYPE_CHALLENGE ? first.payload() : null;
        openingRefusal = challenge == null ? first : null;
    }

    record Frame(int type, int flags, long id, byte[] payload) {
        ByteBuffer le() {
            return ByteBuffer.wrap(payload).order(ByteOrder.LITTLE_ENDIAN);
        }
    }

    record Reply(int status, long sessionId, byte[] key, int gpuCount, String message) {}

    record ErrorFrame(int code, String message) {}

    static byte[] sha256(byte[] data) throws Exception {
        return MessageDigest.getInstance("SHA-256").digest(data);
    }

    /** A HELLO without a token (its proof is 32 zero bytes): what a client of an open appliance sends. */
    static byte[] hello(int version, int role, long size, byte[] sha, int gpus, long sessionId, byte[] key, String name) {
        return concat(helloBody(version, role, size, sha, gpus, sessionId, key, name), new byte[Wire.PROOF_BYTES]);
    }

    /**
     * A HELLO proving {@code token} for {@code challenge}: HMAC-SHA256(SHA-256(token), challenge || body),
     * computed here with the JDK, independently of the daemon's code.
     */
    static byte[] hello(int version, int role, long size, byte[] sha, int gpus, long sessionId, byte[] key, String name,
                        String token, byte[] challenge) {
        byte[] body = helloBody(version, role, size, sha, gpus, sessionId, key, name);
        try {
            javax.crypto.Mac mac = javax.crypto.Mac.getInstance("HmacSHA256");
            mac.init(new javax.crypto.spec.SecretKeySpec(sha256(token.getBytes(StandardCharsets.UTF_8)), "HmacSHA256"));
            mac.update(challenge == null ? new byte[Wire.CHALLENGE_BYTES] : challenge);
            return concat(body, mac.doFinal(body));
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    private static byte[] helloBody(int version, int role, long size, byte[] sha, int gpus, long sessionId, byte[] key,
                                    String name) {
        byte[] n = name.getBytes(StandardCharsets.UTF_8);
        ByteBuffer b = ByteBuffer.allocate(4 + 4 + 8 + 32 + 4 + 8 + 32 + 2 + n.length + 2).order(ByteOrder.LITTLE_ENDIAN);
        b.putInt(version).putInt(role).putLong(size).put(sha).putInt(gpus).putLong(sessionId).put(key)
                .putShort((short) n.length).put(n).putShort((short) Wire.VISIBLE_UNSET);
        return b.array();
    }

    void sendNewHello(byte[] binary, String name) throws Exception {
        sendFrame(Wire.TYPE_HELLO, hello(Wire.PROTO_VERSION, Wire.ROLE_NEW, binary.length, sha256(binary), 1, 0,
                new byte[32], name));
    }

    void sendNewHello(byte[] binary, String name, String token, int gpus) throws Exception {
        sendFrame(Wire.TYPE_HELLO, hello(Wire.PROTO_VERSION, Wire.ROLE_NEW, binary.length, sha256(binary), gpus, 0,
                new byte[32], name, token, challenge));
    }

    void sendJoinHello(long sessionId, byte[] key, String token) throws IOException {
        sendFrame(Wire.TYPE_HELLO, hello(Wire.PROTO_VERSION, Wire.ROLE_JOIN, 0, new byte[32], 0, sessionId, key, "join",
                token, challenge));
    }

    void sendJoinHello(long sessionId, byte[] key) throws IOException {
        sendFrame(Wire.TYPE_HELLO, hello(Wire.PROTO_VERSION, Wire.ROLE_JOIN, 0, new byte[32], 0, sessionId, key, "join"));
    }

    void sendFrame(int type, byte[] payload) throws IOException {
        sendRaw(header(Wire.MAGIC, type, payload.length));
        sendRaw(payload);
    }

    static byte[] header(int magic, int type, long len) {
        return ByteBuffer.allocate(Wire.HEADER_BYTES).order(ByteOrder.LITTLE_ENDIAN)
                .putInt(magic).putShort((short) type).putShort((short) 0).putInt(0).putInt((int) len).array();
    }

    void sendRaw(byte[] bytes) throws IOException {
        out.write(bytes);
        out.flush();
    }

    /** Sends the binary as BINARY_CHUNK frames of at most {@code chunk} bytes. */
    void upload(byte[] binary, int chunk) throws IOException {
        for (int off = 0; off < binary.length; off += chunk) {
            int n = Math.min(chunk, binary.length - off);
            byte[] part = new byte[n];
            System.arraycopy(binary, off, part, 0, n);
            sendFrame(Wire.TYPE_BINARY_CHUNK, part);
        }
    }

    /** The next frame, or null at end of stream. */
    Frame readFrame() throws IOException {
        byte[] h = new byte[Wire.HEADER_BYTES];
        try {
            in.readFully(h);
        } catch (EOFException e) {
            return null;
        }
        ByteBuffer b = ByteBuffer.wrap(h).order(ByteOrder.LITTLE_ENDIAN);
        int magic = b.getInt();
        if (magic != Wire.MAGIC) throw new IOException(String.format("bad magic from daemon 0x%08x", magic));
        int type = Short.toUnsignedInt(b.getShort());
        int flags = Short.toUnsignedInt(b.getShort());
        long id = Integer.toUnsignedLong(b.getInt());
        long len = Integer.toUnsignedLong(b.getInt());
        if (len > Wire.MAX_BINARY_CHUNK) throw new IOException("absurd frame length " + len);
        byte[] p = new byte[(int) len];
        in.readFully(p);
        return new Frame(type, flags, id, p);
    }

    Reply readReply() throws IOException {
        Frame f = readFrame();
        if (f == null) throw new EOFException("connection closed instead of HELLO_REPLY");
        if (f.type() != Wire.TYPE_HELLO_REPLY) throw new IOException("expected HELLO_REPLY, got frame type " + f.type());
        ByteBuffer b = f.le();
        int status = b.getInt();
        long id = b.getLong();
        byte[] key = new byte[32];
        b.get(key);
        int gpus = b.getInt();
        byte[] msg = new byte[Short.toUnsignedInt(b.getShort())];
        b.get(msg);
        if (b.hasRemaining()) throw new IOException("HELLO_REPLY with trailing bytes");
        return new Reply(status, id, key, gpus, new String(msg, StandardCharsets.UTF_8));
    }

    ErrorFrame readError() throws IOException {
        Frame f = openingRefusal != null ? openingRefusal : readFrame();
        if (f == null) throw new EOFException("connection closed instead of ERROR");
        if (f.type() != Wire.TYPE_ERROR) throw new IOException("expected ERROR, got frame type " + f.type());
        ByteBuffer b = f.le();
        int code = b.getInt();
        byte[] msg = new byte[Short.toUnsignedInt(b.getShort())];
        b.get(msg);
        return new ErrorFrame(code, new String(msg, StandardCharsets.UTF_8));
    }

    /** True when the peer has closed: the next read sees end of stream. */
    boolean peerClosed() throws IOException {
        return socket.getInputStream().read() < 0;
    }

    byte[] readExactly(int n) throws IOException {
        byte[] b = new byte[n];
        in.readFully(b);
        return b;
    }

    /** Reads fail with SocketTimeoutException after {@code ms} without a byte (0: wait for ever). */
    void socketTimeout(int ms) throws IOException {
        socket.setSoTimeout(ms);
    }

    InputStream input() {
        return in;
    }

    @Override
    public void close() throws IOException {
        socket.close();
    }

    static String text(byte[] b) {
        return new String(b, StandardCharsets.UTF_8);
    }

    static byte[] concat(byte[]... parts) {
        ByteArrayOutputStream o = new ByteArrayOutputStream();
        for (byte[] p : parts) o.writeBytes(p);
        return o.toByteArray();
    }
}
