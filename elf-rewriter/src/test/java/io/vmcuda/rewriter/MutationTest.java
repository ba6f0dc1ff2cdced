package io.vmcuda.rewriter;

import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Randomly corrupted copies of real binaries (bytes of the ELF header, program and section header tables and
 * the dynamic-linking tables changed, or the file truncated) only ever produce the rewriter's typed error, and
 * every output the rewriter does produce passes {@code readelf -lSdW} without a warning.
 *
 * <p>Seeded: the seed is printed; rerun with {@code -Dvmcuda.mutation.seed=N} (and
 * {@code -Dvmcuda.mutation.iterations=N}, default 10000). A failing input is kept in target/mutation-failures.
 */
class MutationTest {
    private static final int READELF_BATCH = 250;
    private static final Set<String> TARGET_SECTIONS = Set.of(".interp", ".note.gnu.property",
            ".note.gnu.build-id", ".note.ABI-tag", ".gnu.hash", ".dynsym", ".dynstr", ".gnu.version",
            ".gnu.version_r", ".rela.dyn", ".rela.plt", ".dynamic", ".symtab", ".strtab", ".shstrtab");
    private static final Pattern SECTION_LINE = Pattern.compile(
            "^\\s*\\[\\s*\\d+]\\s+(\\S+)\\s+\\S+\\s+[0-9a-f]+\\s+([0-9a-f]+)\\s+([0-9a-f]+)", Pattern.MULTILINE);

    private record Region(String name, int offset, int length) {
    }

    private record Base(String name, byte[] bytes, List<Region> regions) {
    }

    @TempDir
    Path temp;

    @Test
    void corruptedBinariesOnlyEverFailWithTheTypedErrorAndOutputsStayCoherent() throws Exception {
        long seed = Long.getLong("vmcuda.mutation.seed", new SecureRandom().nextLong());
        int iterations = Integer.getInteger("vmcuda.mutation.iterations", 10_000);
        System.out.println("MutationTest seed " + seed + " (rerun with -Dvmcuda.mutation.seed=" + seed + ")");
        Random random = new Random(seed);
        List<Base> bases = List.of(base(Fixtures.helloPie()), base(Fixtures.helloNoPie()),
                base(Fixtures.helloNowRelro()), base(Fixtures.helloCxx()));

        Map<Path, String> pending = new HashMap<>();
        int rewritten = 0;
        int refused = 0;
        for (int i = 0; i < iterations; i++) {
            Base base = bases.get(random.nextInt(bases.size()));
            StringBuilder description = new StringBuilder("iteration " + i + " of seed " + seed + ": " + base.name);
            byte[] corrupted = mutate(base, random, description);
            Path input = Files.write(temp.resolve("input-" + i), corrupted);
            Path output = temp.resolve("output-" + i);
            Admission admission = null;
            ElfRewriteException refusal = null;
            try {
                admission = ElfRewriter.check(input);
                ElfRewriter.rewrite(input, output);
            } catch (ElfRewriteException e) {
                refusal = e;
            } catch (Throwable t) {
                failWith(input, description, "unexpected " + t, t);
            }
            if (refusal == null) {
                if (!admission.ok()) {
                    failWith(input, description, "rewrite succeeded but check refused: " + admission.reason());
                }
                pending.put(output, description.toString());
                rewritten++;
            } else {
                if (admission.ok() || !refusal.getMessage().equals(admission.reason())
                        || refusal.getMessage().contains("\n")) {
                    failWith(input, description, "check said " + admission + ", rewrite said " + refusal.getMessage());
                }
                refused++;
            }
            Files.delete(input);
            if (pending.size() >= READELF_BATCH) {
                verifyWithReadelf(pending);
            }
        }
        verifyWithReadelf(pending);
        System.out.println("MutationTest: " + iterations + " corrupted copies, " + refused + " refused, "
                + rewritten + " rewritten (all readelf-clean)");
        assertTrue(rewritten > iterations / 20, "corruptions that leave the binary usable must still be rewritten");
        assertTrue(refused > iterations / 4, "most corruptions must be detected");
    }

    private static Base base(Path file) throws IOException {
        byte[] bytes = Files.readAllBytes(file);
        ByteBuffer b = ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN);
        List<Region> regions = new ArrayList<>();
        regions.add(new Region("ELF header", 0, 64));
        regions.add(new Region("program headers", (int) b.getLong(32), 56 * b.getShort(56)));
        regions.add(new Region("section headers", (int) b.getLong(40), 64 * b.getShort(60)));
        Matcher m = SECTION_LINE.matcher(Processes.run(List.of("readelf", "-SW", file.toString())).stdout());
        while (m.find()) {
            if (TARGET_SECTIONS.contains(m.group(1))) {
                regions.add(new Region(m.group(1), Integer.parseInt(m.group(2), 16), Integer.parseInt(m.group(3), 16)));
            }
        }
        return new Base(file.getFileName().toString(), bytes, regions);
    }

    private static byte[] mutate(Base base, Random random, StringBuilder description) {
        byte[] bytes = base.bytes.clone();
        int mutations = random.nextInt(5) == 0 ? 2 : 1;
        for (int m = 0; m < mutations; m++) {
            int kind = random.nextInt(20);
            if (kind < 2) {
                int length = random.nextInt(bytes.length);
                description.append(", truncated to ").append(length);
                return java.util.Arrays.copyOf(bytes, length);
            }
            Region region = base.regions.get(random.nextInt(base.regions.size()));
            if (kind < 11) {
                int count = 1 + random.nextInt(4);
                for (int k = 0; k < count; k++) {
                    int at = region.offset + random.nextInt(region.length);
                    bytes[at] = (byte) random.nextInt(256);
                    description.append(", byte ").append(region.name).append("+").append(at - region.offset);
                }
            } else {
                int width = 1 << (1 + random.nextInt(3)); // 2, 4 or 8 bytes, aligned like ELF fields
                if (region.length < width) {
                    continue;
                }
                int at = region.offset + random.nextInt(region.length / width) * width;
                long value = interestingValue(random, bytes, at, width);
                ByteBuffer b = ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN);
                switch (width) {
                    case 2 -> b.putShort(at, (short) value);
                    case 4 -> b.putInt(at, (int) value);
                    default -> b.putLong(at, value);
                }
                description.append(", field ").append(region.name).append("+").append(at - region.offset)
                        .append("=0x").append(Long.toHexString(value));
            }
        }
        return bytes;
    }

    private static long interestingValue(Random random, byte[] bytes, int at, int width) {
        ByteBuffer b = ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN);
        long current = width == 2 ? b.getShort(at) : width == 4 ? b.getInt(at) : b.getLong(at);
        return switch (random.nextInt(9)) {
            case 0 -> 0;
            case 1 -> 1;
            case 2 -> -1;
            case 3 -> Integer.MAX_VALUE;
            case 4 -> bytes.length;
            case 5 -> bytes.length + 1 + random.nextInt(8192);
            case 6 -> current + 1 + random.nextInt(64);
            case 7 -> current - 1 - random.nextInt(64);
            default -> random.nextLong();
        };
    }

    private static void verifyWithReadelf(Map<Path, String> outputs) throws IOException {
        if (outputs.isEmpty()) {
            return;
        }
        if (!Readelf.complaints(List.copyOf(outputs.keySet())).isEmpty()) {
            for (Map.Entry<Path, String> e : outputs.entrySet()) {
                String complaints = Readelf.complaints(List.of(e.getKey()));
                if (!complaints.isEmpty()) {
                    Path kept = keep(e.getKey());
                    fail("readelf -lSdW complains about the output of " + e.getValue() + " (kept as " + kept + "):\n"
                            + complaints);
                }
            }
        }
        for (Path p : outputs.keySet()) {
            Files.delete(p);
        }
        outputs.clear();
    }

    private static void failWith(Path input, CharSequence description, String problem) throws IOException {
        failWith(input, description, problem, null);
    }

    private static void failWith(Path input, CharSequence description, String problem, Throwable cause)
            throws IOException {
        Path kept = keep(input);
        fail(description + " (input kept as " + kept + "): " + problem, cause);
    }

    private static Path keep(Path file) throws IOException {
        Path dir = Fixtures.DIR.resolveSibling("mutation-failures");
        Files.createDirectories(dir);
        return Files.copy(file, dir.resolve(file.getFileName()), java.nio.file.StandardCopyOption.REPLACE_EXISTING);
    }
}
