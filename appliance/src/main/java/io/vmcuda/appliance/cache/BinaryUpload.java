package io.vmcuda.appliance.cache;

import io.netty.buffer.ByteBuf;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;

/**
 * One client's executable arriving as BINARY_CHUNK frames: each chunk goes straight to a temp file and
 * into the running SHA-256, so a multi-GB binary never sits in the heap.
 */
public final class BinaryUpload implements AutoCloseable {
    private final UploadBudget.Reservation reservation; // the tenant's share of the disk this upload may take
    private final Path file;
    private final FileChannel out;
    private final MessageDigest sha256;
    private final long expectedBytes;
    private final byte[] expectedSha;
    private long received;
    private boolean kept;

    /** Made by {@link BinaryCache#startUpload}, which reserves the tenant's share first; closes it on failure. */
    BinaryUpload(Path dir, long expectedBytes, byte[] expectedSha, UploadBudget.Reservation reservation) throws IOException {
        this.reservation = reservation;
        Path f = null;
        try {
            Files.createDirectories(dir);
            f = Files.createTempFile(dir, "upload-", ".bin");
            this.out = FileChannel.open(f, StandardOpenOption.WRITE, StandardOpenOption.TRUNCATE_EXISTING);
        } catch (IOException e) {
            reservation.close();
            if (f != null) Files.deleteIfExists(f);
            throw e;
        }
        this.file = f;
        this.expectedBytes = expectedBytes;
        this.expectedSha = expectedSha.clone();
        try {
            this.sha256 = MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("every Java runtime has SHA-256", e);
        }
    }

    /**
     * Checks, at a chunk's header, that its {@code chunkBytes} fit what is still to come, so that no byte of a chunk
     * that cannot fit is stored (chunks are stored in parts as they arrive).
     * @throws BinaryRefusedException when the client would send more than it announced
     */
    public void checkRoomFor(long chunkBytes) throws BinaryRefusedException {
        if (chunkBytes > expectedBytes - received) {
            throw new BinaryRefusedException("client sent more than the " + expectedBytes
                    + " bytes its HELLO announced");
        }
    }

    /**
     * Appends one chunk, or a part of one (without consuming the caller's buffer).
     * @return true when all announced bytes are in
     * @throws BinaryRefusedException when the client sends more than it announced
     */
    public boolean append(ByteBuf chunk) throws IOException, BinaryRefusedException {
        int n = chunk.readableBytes();
        checkRoomFor(n);
        for (ByteBuffer part : chunk.nioBuffers()) {
            sha256.update(part.duplicate());
            ByteBuffer w = part.duplicate();
            while (w.hasRemaining()) out.write(w);
        }
        received += n;
        reservation.wrote(n); // on the disk now: no longer a promise on its free space
        return received == expectedBytes;
    }

    public long receivedBytes() {
        return received;
    }

    /** Closes the file and checks the hash; the file then belongs to the caller (see {@link #file()}). */
    public Path finish() throws IOException, BinaryRefusedException {
        out.close();
        byte[] got = sha256.digest();
        if (!MessageDigest.isEqual(got, expectedSha)) {
            HexFormat hex = HexFormat.of();
            throw new BinaryRefusedException("uploaded binary does not match its SHA-256: HELLO said "
                    + hex.formatHex(expectedSha) + ", the bytes hash to " + hex.formatHex(got));
        }
        kept = true;
        return file;
    }

    /**
     * Deletes the temp file unless {@link #finish()} handed it over, and gives the tenant's share back: call it once
     * the file handed over has been moved into a cache or deleted, since until then it still takes the disk.
     */
    @Override
    public void close() {
        reservation.close();
        try {
            out.close();
            if (!kept) Files.deleteIfExists(file);
        } catch (IOException e) {
            // a leftover temp file is removed when the cache starts next time
        }
    }
}
