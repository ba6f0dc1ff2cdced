package io.vmcuda.rewriter;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Set;

/**
 * Writes a {@link RewritePlan}: the input is copied by the kernel (FileChannel.transferTo, never through the
 * Java heap), the few patched headers are written over the copy, and the new tables are appended. The result
 * appears atomically: it is written to a temporary file in the output's directory and renamed.
 */
final class RewriteWriter {
    private static final Set<PosixFilePermission> MODE_0755 = PosixFilePermissions.fromString("rwxr-xr-x");

    private RewriteWriter() {
    }

    static void write(FileChannel input, RewritePlan plan, Path output) throws IOException {
        Path absolute = output.toAbsolutePath();
        Path temporary = Files.createTempFile(absolute.getParent(), "." + absolute.getFileName() + ".", ".tmp");
        try {
            try (FileChannel out = FileChannel.open(temporary, StandardOpenOption.WRITE,
                    StandardOpenOption.TRUNCATE_EXISTING)) {
                copy(input, out);
                applyPatches(plan, out);
            }
            Files.setPosixFilePermissions(temporary, MODE_0755);
            Files.move(temporary, absolute, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        } catch (IOException | RuntimeException e) {
            Files.deleteIfExists(temporary);
            throw e;
        }
    }

    private static void copy(FileChannel input, FileChannel out) throws IOException {
        long size = input.size();
        for (long done = 0; done < size; ) {
            long n = input.transferTo(done, size - done, out);
            if (n <= 0) {
                throw new IOException("copy stalled at byte " + done + " of " + size);
            }
            done += n;
        }
    }

    private static void applyPatches(RewritePlan plan, FileChannel out) throws IOException {
        ByteBuffer headers = buffer(plan.programHeaders.size() * Elf64.PHDR_SIZE);
        plan.programHeaders.forEach(s -> s.writeTo(headers));
        writeFully(out, headers.flip(), plan.phoff);
        for (Section s : plan.movedSections) {
            ByteBuffer header = buffer(Elf64.SHDR_SIZE);
            s.writeTo(header);
            writeFully(out, header.flip(), plan.shoff + (long) s.index() * Elf64.SHDR_SIZE);
        }
        writeFully(out, buffer(4).putInt(plan.newSymbolName).flip(), plan.symbolNameField);
        if (plan.versionField.isPresent()) {
            writeFully(out, buffer(2).putShort((short) Elf64.VER_NDX_GLOBAL).flip(), plan.versionField.get());
        }
        // Bytes between the old end and appendOffset read back as zeros (a hole in the file).
        writeFully(out, ByteBuffer.wrap(plan.appended), plan.appendOffset);
    }

    private static ByteBuffer buffer(int size) {
        return ByteBuffer.allocate(size).order(ByteOrder.LITTLE_ENDIAN);
    }

    private static void writeFully(FileChannel out, ByteBuffer data, long position) throws IOException {
        long at = position;
        while (data.hasRemaining()) {
            at += out.write(data, at);
        }
    }
}
