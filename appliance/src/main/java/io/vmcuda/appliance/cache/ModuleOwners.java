package io.vmcuda.appliance.cache;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;

/**
 * The {@code tenants} file of each module cache entry: who uploaded its bytes (one name a line), or
 * {@link #PUBLIC} for what the operator seeded. Rewritten whole through a rename, so a reader never sees
 * half a list. Callers serialise changes (ModuleCache's lock).
 */
final class ModuleOwners {
    static final String FILE = "tenants";
    /** The owner of entries the operator seeded (vmcudad cache seed): every tenant may use them. Tenant
     *  names are letters, digits, _ and -, so no tenant can be called this. */
    static final String PUBLIC = "(public)";

    private final Path dir;

    ModuleOwners(Path dir) {
        this.dir = dir;
    }

    /** The owners of entry {@code sha256}; empty when it has no list (nobody's). */
    Set<String> of(String sha256) throws IOException {
        Path f = dir.resolve(sha256).resolve(FILE);
        return Files.isRegularFile(f) ? new TreeSet<>(Files.readAllLines(f, StandardCharsets.UTF_8)) : Set.of();
    }

    /** The list of a new entry, written into its staging directory {@code entry}. */
    static void writeFirst(Path entry, String tenant) throws IOException {
        Files.write(entry.resolve(FILE), List.of(tenant), StandardCharsets.UTF_8);
    }

    void add(String sha256, String tenant) throws IOException {
        Set<String> owners = new TreeSet<>(of(sha256));
        if (owners.add(tenant)) write(sha256, owners);
    }

    void remove(String sha256, String tenant) throws IOException {
        Set<String> owners = new TreeSet<>(of(sha256));
        if (owners.remove(tenant)) write(sha256, owners);
    }

    private void write(String sha256, Set<String> owners) throws IOException {
        Path tmp = dir.resolve(sha256).resolve(FILE + ".tmp");
        Files.write(tmp, owners, StandardCharsets.UTF_8);
        Files.move(tmp, dir.resolve(sha256).resolve(FILE), StandardCopyOption.ATOMIC_MOVE,
                StandardCopyOption.REPLACE_EXISTING);
    }
}
