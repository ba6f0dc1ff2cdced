package io.vmcuda.rewriter;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.function.Consumer;

/** Builds unusual or damaged variants of real binaries by patching copies of them (test inputs only). */
final class ProgramHeaderSurgery {
    private static final int PT_LOAD = 1;
    private static final int PT_NOTE = 4;
    private static final int PT_PHDR = 6;
    private static final int PT_INTERP = 3;

    private ProgramHeaderSurgery() {
    }

    /** A copy with bytes patched through a little-endian buffer over the whole file. */
    static void patchedCopy(Path from, Path to, Consumer<ByteBuffer> patch) throws IOException {
        ByteBuffer bytes = ByteBuffer.wrap(Files.readAllBytes(from)).order(ByteOrder.LITTLE_ENDIAN);
        patch.accept(bytes);
        Files.write(to, bytes.array());
        Files.setPosixFilePermissions(to, PosixFilePermissions.fromString("rwxr-xr-x"));
    }

    /** Reorders the program header table so that PT_NOTEs come right after PT_PHDR/PT_INTERP. */
    static void moveNotesBeforeLoads(Path from, Path to) throws IOException {
        patchedCopy(from, to, b -> {
            long phoff = b.getLong(32);
            int phnum = b.getShort(56);
            List<byte[]> headers = new ArrayList<>();
            for (int i = 0; i < phnum; i++) {
                byte[] h = new byte[56];
                b.get((int) phoff + 56 * i, h);
                headers.add(h);
            }
            headers.sort(Comparator.comparingInt(h -> {
                int type = ByteBuffer.wrap(h).order(ByteOrder.LITTLE_ENDIAN).getInt(0);
                return type == PT_PHDR ? 0 : type == PT_INTERP ? 1 : type == PT_NOTE ? 2 : 3;
            }));
            for (int i = 0; i < phnum; i++) {
                b.put((int) phoff + 56 * i, headers.get(i));
            }
        });
    }

    /** Retypes every PT_NOTE to an OS-specific type the kernel and ld.so ignore: no spare header left. */
    static void withoutNotes(Path from, Path to) throws IOException {
        patchedCopy(from, to, b -> forEachProgramHeader(b, (at, type) -> {
            if (type == PT_NOTE) {
                b.putInt(at, 0x60000001);
            }
        }));
    }

    /** Sets the file size of the last PT_LOAD far beyond the end of the file. */
    static void withSegmentBeyondEnd(Path from, Path to) throws IOException {
        patchedCopy(from, to, b -> {
            int[] last = {-1};
            forEachProgramHeader(b, (at, type) -> {
                if (type == PT_LOAD) {
                    last[0] = at;
                }
            });
            b.putLong(last[0] + 32, 1L << 32);
            b.putLong(last[0] + 40, 1L << 32);
        });
    }

    interface HeaderVisitor {
        void visit(int offset, int type);
    }

    static void forEachProgramHeader(ByteBuffer b, HeaderVisitor visitor) {
        long phoff = b.getLong(32);
        int phnum = b.getShort(56);
        for (int i = 0; i < phnum; i++) {
            int at = (int) phoff + 56 * i;
            visitor.visit(at, b.getInt(at));
        }
    }
}
