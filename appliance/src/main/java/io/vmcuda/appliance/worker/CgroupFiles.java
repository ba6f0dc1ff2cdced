package io.vmcuda.appliance.worker;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;

/** Reads and writes of cgroupfs control files: one value per write(2), never creating or truncating. */
final class CgroupFiles {
    private CgroupFiles() {
    }

    static void write(Path file, String value) throws IOException {
        try {
            Files.write(file, value.getBytes(StandardCharsets.US_ASCII), StandardOpenOption.WRITE);
        } catch (IOException e) {
            // the kernel's reason (EBUSY, EINVAL, EACCES...) is all the message says: name the file and value
            throw new IOException("write '" + value + "' to " + file + ": " + e.getMessage(), e);
        }
    }

    /** The processes in the cgroup {@code dir} itself (not in its children). */
    static List<Long> pids(Path dir) throws IOException {
        List<Long> pids = new ArrayList<>();
        for (String line : Files.readAllLines(dir.resolve("cgroup.procs"))) {
            if (!line.isBlank()) pids.add(Long.parseLong(line.trim()));
        }
        return pids;
    }

    /** The number after {@code key} in a flat-keyed file such as memory.events ("oom_kill 2"); 0 when absent. */
    static long keyed(Path file, String key) {
        try {
            for (String line : Files.readAllLines(file)) {
                String[] kv = line.trim().split("\\s+");
                if (kv.length == 2 && kv[0].equals(key)) return Long.parseLong(kv[1]);
            }
        } catch (IOException | NumberFormatException e) {
            return 0;
        }
        return 0;
    }
}
