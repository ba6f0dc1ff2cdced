package io.vmcuda.appliance.cache;

import io.vmcuda.appliance.worker.LibraryResolver;
import io.vmcuda.rewriter.ElfDependencies;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.Set;

/**
 * Shared libraries of a shipped program that only its client has (PROTOCOL.md "Client libraries"): which ones the
 * appliance lacks ({@link LibraryResolver}), and where the shipped ones are kept: in the module cache, by content
 * and per tenant like module images, so that a tenant's second start sends none of them and no tenant learns what
 * another's libraries are. Without a module cache ({@code cache.module_bytes = 0}) such programs are refused.
 */
public final class ClientLibraries {
    private final LibraryResolver resolver;
    private volatile ModuleCache store;

    public ClientLibraries(LibraryResolver resolver) {
        this.resolver = resolver;
    }

    public void useStore(ModuleCache cache) {
        this.store = cache;
    }

    public List<String> missing(ElfDependencies deps, Set<String> provided) {
        return resolver.missing(deps, provided);
    }

    /** Why shipped libraries cannot be kept here, or null when they can. */
    public String cannotStore() {
        return store == null ? "this appliance keeps no client libraries (its module cache is off: cache.module_bytes = 0)" : null;
    }

    public Optional<Path> lookup(String sha256, long size, String tenant) {
        ModuleCache s = store;
        return s == null ? Optional.empty() : s.lookup(sha256, size, tenant);
    }

    /** Keeps the verified upload {@code file} as the library {@code sha256} of {@code tenant}; returns why not, or null. */
    public String admit(String sha256, long size, String tenant, Path file) {
        ModuleCache s = store;
        return s == null ? cannotStore() : s.admit(sha256, size, tenant, file);
    }
}
