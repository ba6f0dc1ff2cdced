package io.vmcuda.appliance.cache;

import java.nio.file.Path;

/** A cache entry: where the original and the rewritten executable lie, and their sizes. */
public record CachedBinary(String sha256, String name, Path original, Path rewritten,
                           long originalBytes, long rewrittenBytes) {}
