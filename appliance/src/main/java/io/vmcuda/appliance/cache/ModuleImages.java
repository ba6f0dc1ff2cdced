package io.vmcuda.appliance.cache;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;

/**
 * Finds the module images in a file the way the driver front end's client sizes them (client-shim
 * drv_module.c), so that their SHA-256 are the ones clients ask for: each fat binary (magic 0xba55ed50,
 * header size, payload size) in the {@code .nv_fatbin} and {@code __nv_relfatbin} sections of an ELF file
 * (a CUDA library such as libcublasLt.so, or a program), a file that is itself one fat binary, or a
 * cubin (an ELF file for the CUDA machine) as a whole. Bounds-checked: a damaged file yields what can be
 * read of it, or an empty list, never more than the file holds.
 */
public final class ModuleImages {
    /** An image: {@code length} bytes at {@code offset} in the file. */
    public record Image(long offset, long length) {}

    static final int FATBIN_MAGIC = 0xba55ed50;
    private static final int EM_CUDA = 190;
    private static final List<String> FATBIN_SECTIONS = List.of(".nv_fatbin", "__nv_relfatbin");

    private ModuleImages() {}

    /**
     * Whether {@code file} starts the way something the driver loads does: a fat binary, a 64-bit ELF file (a cubin,
     * an object file or shared library for the linker, a client library), an ar archive (a device library such as
     * libcudadevrt.a for the linker), or PTX text (after white space, {@code .version} or a {@code //} comment, as
     * the client's drv_module.c tells PTX). A cheap look at the first bytes only: it keeps what a tenant's code drops
     * among its worker's offers from being kept unless it at least looks like an image; a crafted image passes.
     */
    public static boolean looksLoadable(Path file) throws IOException {
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ)) {
            ByteBuffer head = read(ch, 0, (int) Math.min(4096, ch.size()));
            int n = head.remaining();
            if (n >= 16 && head.getInt(0) == FATBIN_MAGIC && Short.toUnsignedInt(head.getShort(6)) >= 16) return true;
            if (n >= 64 && head.getInt(0) == 0x464c457f && head.get(4) == 2) return true;
            if (startsWith(head, 0, "!<arch>\n")) return true;
            int at = 0;
            while (at < n && " \t\r\n".indexOf(head.get(at)) >= 0) at++;
            return startsWith(head, at, ".version") || startsWith(head, at, "//");
        }
    }

    private static boolean startsWith(ByteBuffer b, int at, String prefix) {
        if (b.remaining() - at < prefix.length()) return false;
        for (int i = 0; i < prefix.length(); i++) if (b.get(at + i) != prefix.charAt(i)) return false;
        return true;
    }

    public static List<Image> in(Path file) throws IOException {
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ)) {
            long size = ch.size();
            ByteBuffer head = read(ch, 0, (int) Math.min(64, size));
            if (head.remaining() >= 16 && head.getInt(0) == FATBIN_MAGIC) {
                List<Image> out = new ArrayList<>();
                walkFatbins(ch, 0, size, out);
                return out;
            }
            if (head.remaining() < 64 || head.getInt(0) != 0x464c457f || head.get(4) != 2 || head.get(5) != 1) {
                return List.of(); // not a fat binary, not a 64-bit little-endian ELF file
            }
            if (Short.toUnsignedInt(head.getShort(18)) == EM_CUDA) return List.of(new Image(0, size));
            List<Image> out = new ArrayList<>();
            long shoff = head.getLong(0x28);
            int shentsize = Short.toUnsignedInt(head.getShort(0x3a));
            int shnum = Short.toUnsignedInt(head.getShort(0x3c));
            int shstrndx = Short.toUnsignedInt(head.getShort(0x3e));
            if (shentsize != 64 || shnum == 0 || shstrndx >= shnum || !inside(shoff, (long) shnum * 64, size)) return out;
            ByteBuffer sh = read(ch, shoff, shnum * 64);
            long strOff = sh.getLong(shstrndx * 64 + 0x18), strSize = sh.getLong(shstrndx * 64 + 0x20);
            if (strSize > (1 << 24) || !inside(strOff, strSize, size)) return out;
            ByteBuffer names = read(ch, strOff, (int) strSize);
            for (int i = 0; i < shnum; i++) {
                int type = sh.getInt(i * 64 + 4);
                long off = sh.getLong(i * 64 + 0x18), len = sh.getLong(i * 64 + 0x20);
                if (type == 8 /* SHT_NOBITS */ || len <= 0 || !inside(off, len, size)) continue;
                if (FATBIN_SECTIONS.contains(name(names, sh.getInt(i * 64)))) walkFatbins(ch, off, off + len, out);
            }
            return out;
        }
    }

    /** The fat binaries one after another in [from, to): each at an 8-byte boundary, padding skipped. */
    private static void walkFatbins(FileChannel ch, long from, long to, List<Image> out) throws IOException {
        long at = from;
        while (at + 16 <= to) {
            ByteBuffer h = read(ch, at, 16);
            if (h.getInt(0) != FATBIN_MAGIC) {
                at += 8;
                continue;
            }
            int headerSize = Short.toUnsignedInt(h.getShort(6));
            long filesSize = h.getLong(8);
            // damaged (sizes past the end, or overflowing): stop, claim nothing more
            if (headerSize < 16 || filesSize < 0 || filesSize > to - at - headerSize) return;
            long length = headerSize + filesSize;
            out.add(new Image(at, length));
            at += (length + 7) & ~7L;
        }
    }

    /** [off, off + len) lies in [0, size), with no overflow on the way. */
    private static boolean inside(long off, long len, long size) {
        return off >= 0 && len >= 0 && off <= size && len <= size - off;
    }

    private static String name(ByteBuffer names, int at) {
        if (at < 0 || at >= names.limit()) return "";
        int end = at;
        while (end < names.limit() && names.get(end) != 0) end++;
        byte[] b = new byte[end - at];
        names.get(at, b);
        return new String(b, StandardCharsets.ISO_8859_1);
    }

    private static ByteBuffer read(FileChannel ch, long at, int n) throws IOException {
        ByteBuffer b = ByteBuffer.allocate(n).order(ByteOrder.LITTLE_ENDIAN);
        while (b.hasRemaining() && ch.read(b, at + b.position()) > 0) {
            // until full or end of file
        }
        return b.flip();
    }
}
