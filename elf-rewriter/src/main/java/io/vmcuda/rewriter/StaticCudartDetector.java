package io.vmcuda.rewriter;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Optional;

/**
 * Recognises programs that carry the CUDA runtime inside themselves (nvcc's default, {@code -cudart static}).
 * Such a program never calls into libcudart.so, so the worker library cannot interpose on its CUDA calls;
 * it must be rebuilt with {@code -cudart shared}.
 */
final class StaticCudartDetector {
    /** Symbol name prefixes only libcudart_static.a brings (CUDA 12: cudart:: / __cudart*, CUDA 13: hashed names). */
    private static final List<byte[]> STATIC_CUDART_PREFIXES = List.of(
            "libcudart_static".getBytes(StandardCharsets.US_ASCII),
            "_ZN6cudart".getBytes(StandardCharsets.US_ASCII),
            "__cudart".getBytes(StandardCharsets.US_ASCII));
    /** Where nvcc puts the device code of a program; present whether cudart is linked statically or not. */
    private static final String FATBIN_SECTION = ".nv_fatbin";

    static final String ADVICE = "the CUDA runtime is linked statically (nvcc's default): rebuild the program"
            + " with `nvcc -cudart shared` so that it loads libcudart.so";

    private StaticCudartDetector() {
    }

    static boolean linksCudartStatically(ParsedElf elf, List<String> neededLibraries) throws ElfRewriteException {
        if (neededLibraries.stream().anyMatch(n -> n.startsWith("libcudart.so"))) {
            return false;
        }
        if (hasStaticCudartSymbols(elf)) {
            return true;
        }
        // Stripped: device code without a libcudart.so dependency can only be served by a built-in runtime.
        return elf.sectionNamed(FATBIN_SECTION).isPresent();
    }

    private static boolean hasStaticCudartSymbols(ParsedElf elf) throws ElfRewriteException {
        Optional<Section> symtab = elf.firstSection(Elf64.SHT_SYMTAB);
        if (symtab.isEmpty() || symtab.get().entsize() != Elf64.SYM_SIZE) {
            return false;
        }
        Section s = symtab.get();
        StringTable names = new StringTable(elf.bytes, elf.section(s.link(), ".symtab's sh_link"));
        long count = s.size() / Elf64.SYM_SIZE;
        for (long i = 1; i < count; i++) {
            long nameOffset = elf.bytes.u32(s.offset() + i * Elf64.SYM_SIZE, ".symtab");
            for (byte[] prefix : STATIC_CUDART_PREFIXES) {
                if (names.startsWith(nameOffset, prefix)) {
                    return true;
                }
            }
        }
        return false;
    }
}
