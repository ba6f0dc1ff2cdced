package io.vmcuda.appliance.cache;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import io.vmcuda.rewriter.Admission;
import io.vmcuda.rewriter.ElfRewriteException;
import io.vmcuda.rewriter.ElfRewriter;
import java.io.IOException;
import java.io.Reader;
import java.io.UncheckedIOException;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryNotEmptyException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;
import java.util.UUID;
import java.util.logging.Logger;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * Rewritten executables by SHA-256 of the original, so a program the appliance has seen starts without
 * upload or rewrite. Durable part: {@code <cache>/<sha256>/} holding {@code original}, {@code rewritten}
 * and {@code meta.properties}, built in a temp directory and renamed into place so that a crash never
 * leaves a half entry. In-memory part: a Caffeine index of entries (paths and sizes, weighted by the
 * rewritten file's size), so hot hashes skip the disk look-up.
 * <p>Entries belong to tenants: {@code <cache>/<sha256>/tenants} lists, one per line, the tenants that
 * uploaded those bytes. A tenant gets a hit only on an entry it uploaded itself or one the operator marked
 * public ({@code cache.public_sha256}); every other tenant is asked for the bytes (and admitted as an owner
 * once they hash right), so a tenant can neither run another's program by naming its hash nor learn
 * whether anybody runs it. Admission always checks and rewrites the upload, also when the entry exists,
 * so that its time does not tell either.
 * <p>The disk the entries take is bounded (cache.disk_bytes) and so is what entries that only one tenant
 * uploaded take for that tenant (cache.tenant_disk_bytes): past either, the least recently used go, the
 * uploading tenant's own first, so that one tenant's uploads cannot fill the state disk or push everyone
 * else's programs out.
 * Blocking (disk and rewriting): call off the network threads.
 */
public final class BinaryCache {
    private static final Logger LOG = Logger.getLogger(BinaryCache.class.getName());
    private static final Pattern SHA256_HEX = Pattern.compile("[0-9a-f]{64}");
    static final String ORIGINAL = "original";
    static final String REWRITTEN = "rewritten";
    static final String META = "meta.properties";
    private static final String STAGING_PREFIX = ".tmp-";
    private static final String UPLOADS = ".uploads";
    static final String TENANTS = "tenants";

    private final Path dir;
    private final Cache<String, CachedBinary> index;
    private final Set<String> publicHashes;
    private final long diskBytes;
    private final long tenantDiskBytes;
    private final LruEntries lru;
    private volatile UploadBudget uploads = new UploadBudget(0);
    /** Serialises updates of the tenants files (reads go through the index or the disk). */
    private final Object ownersLock = new Object();

    public BinaryCache(Path dir, long memoryBytes) throws IOException {
        this(dir, memoryBytes, Set.of(), Long.MAX_VALUE, 0);
    }

    /**
     * @param publicHashes    entries every tenant may use without uploading (cache.public_sha256)
     * @param diskBytes       what all entries may take on disk (cache.disk_bytes)
     * @param tenantDiskBytes what the entries only one tenant uploaded may take, per tenant (cache.tenant_disk_bytes;
     *                        0: no such limit)
     */
    public BinaryCache(Path dir, long memoryBytes, Set<String> publicHashes, long diskBytes, long tenantDiskBytes)
            throws IOException {
        this.dir = dir;
        this.publicHashes = Set.copyOf(publicHashes);
        this.diskBytes = diskBytes;
        this.tenantDiskBytes = tenantDiskBytes;
        this.lru = new LruEntries(dir, "binary cache", entry -> entry.resolve(REWRITTEN));
        Files.createDirectories(dir);
        removeLeftovers();
        this.index = Caffeine.newBuilder()
                .maximumWeight(memoryBytes)
                .weigher((String sha, CachedBinary b) -> (int) Math.min(Integer.MAX_VALUE, Math.max(1, b.rewrittenBytes())))
                .build();
    }

    /** Where uploads in progress are written (same file system as the entries, so moves are renames). */
    public Path uploadDir() {
        return dir.resolve(UPLOADS);
    }

    /**
     * Bounds what each tenant's uploads in progress may announce together (cache.tenant_upload_bytes; 0: no bound), to
     * no more than the state disk's free space now divided among the {@code tenants} and one share more: on a disk
     * smaller than the setting (the OVA's is 8 GiB, the default share too) one tenant could otherwise fill it.
     */
    public void limitUploadsInProgress(long perTenantBytes, int tenants) {
        long share = perTenantBytes;
        try {
            Files.createDirectories(uploadDir());
            long fair = Files.getFileStore(uploadDir()).getUsableSpace() / (Math.max(1, tenants) + 1);
            if (share > 0 && share > fair) {
                share = Math.max(1, fair);
                LOG.warning("cache.tenant_upload_bytes = " + perTenantBytes + " is more than the state disk's free space"
                        + " divided among " + Math.max(1, tenants) + " tenant(s) and one share more: each tenant's uploads"
                        + " in progress may announce " + share + " bytes together");
            }
        } catch (IOException e) {
            LOG.warning("cannot read the state disk's free space (" + e.getMessage() + "): cache.tenant_upload_bytes as set");
        }
        uploads = new UploadBudget(share);
    }

    /**
     * A new upload of {@code bytes} announced bytes for {@code tenant} (an executable, or a client library), in a file
     * below {@link #uploadDir()}: refused while the tenant's uploads in progress hold its share, or when the state disk
     * has no room for it.
     */
    public BinaryUpload startUpload(String tenant, long bytes, byte[] sha256) throws IOException, BinaryRefusedException {
        Files.createDirectories(uploadDir());
        UploadBudget budget = uploads;
        synchronized (budget) { // the free space and the uploads' promises judged together
            long free = Files.getFileStore(uploadDir()).getUsableSpace(), promised = budget.unwritten();
            if (bytes > free - promised) {
                throw new BinaryRefusedException("the appliance's state disk has " + free + " bytes free, of which uploads in"
                        + " progress still need " + promised + ": less than the " + bytes + " bytes to upload");
            }
            return new BinaryUpload(uploadDir(), bytes, sha256, budget.reserve(tenant, bytes));
        }
    }

    /** The bytes {@code tenant}'s uploads in progress have announced (what cache.tenant_upload_bytes bounds). */
    public long uploadsInProgress(String tenant) {
        return uploads.reservedBy(tenant);
    }

    /** The entry for {@code sha256} when {@code tenant} may use it without uploading (see the class comment). */
    public Optional<CachedBinary> lookup(String sha256, String tenant) {
        if (!SHA256_HEX.matcher(sha256).matches()) return Optional.empty();
        CachedBinary hit = index.getIfPresent(sha256);
        if (hit == null || !Files.isRegularFile(hit.rewritten())) {
            Optional<CachedBinary> fromDisk = readEntry(sha256);
            if (fromDisk.isEmpty()) return Optional.empty();
            hit = fromDisk.get();
            index.put(sha256, hit);
        }
        if (!publicHashes.contains(sha256) && !owners(sha256).contains(tenant)) return Optional.empty();
        try {
            Files.setLastModifiedTime(hit.rewritten(), java.nio.file.attribute.FileTime.fromMillis(System.currentTimeMillis()));
        } catch (IOException e) {
            // evicted meanwhile: this hit still has its paths (the caller links or copies the files at once)
        }
        return Optional.of(hit);
    }

    /** The tenants that uploaded this entry's bytes (empty for an entry of an older version: nobody's yet). */
    Set<String> owners(String sha256) {
        Path f = dir.resolve(sha256).resolve(TENANTS);
        try {
            return Files.isRegularFile(f) ? new TreeSet<>(Files.readAllLines(f, StandardCharsets.UTF_8)) : Set.of();
        } catch (IOException e) {
            LOG.warning("cannot read " + f + ": " + e.getMessage());
            return Set.of();
        }
    }

    private void addOwner(String sha256, String tenant) throws IOException {
        synchronized (ownersLock) {
            Set<String> owners = new TreeSet<>(owners(sha256));
            if (!owners.add(tenant)) return;
            Path entry = dir.resolve(sha256);
            Path tmp = entry.resolve(TENANTS + ".tmp");
            Files.write(tmp, owners, StandardCharsets.UTF_8);
            Files.move(tmp, entry.resolve(TENANTS), StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        }
    }

    /**
     * Admits a verified upload of {@code tenant}: checks it with the rewriter, rewrites it and stores both
     * files, or, when the entry exists already, records the tenant as one more owner of it.
     * Consumes {@code uploaded} (moved into the entry or deleted).
     */
    public CachedBinary admit(String sha256, String name, Path uploaded, String tenant)
            throws BinaryRefusedException, IOException {
        Path staging = dir.resolve(STAGING_PREFIX + sha256 + "-" + UUID.randomUUID());
        try {
            Admission admission = ElfRewriter.check(uploaded);
            if (!admission.ok()) throw new BinaryRefusedException(admission.reason());
            Files.createDirectories(staging);
            Path original = staging.resolve(ORIGINAL);
            Files.move(uploaded, original, StandardCopyOption.ATOMIC_MOVE);
            Path rewritten = staging.resolve(REWRITTEN);
            try {
                ElfRewriter.rewrite(original, rewritten);
            } catch (ElfRewriteException e) {
                throw new BinaryRefusedException("binary cannot be rewritten: " + e.getMessage());
            }
            writeMeta(staging, sha256, name, Files.size(original), Files.size(rewritten));
            Files.write(staging.resolve(TENANTS), java.util.List.of(tenant), StandardCharsets.UTF_8);
            Path entry = dir.resolve(sha256);
            try {
                Files.move(staging, entry, StandardCopyOption.ATOMIC_MOVE);
            } catch (FileAlreadyExistsException | DirectoryNotEmptyException e) {
                // another connection admitted the same binary first; theirs is identical
                LOG.fine("cache entry " + sha256 + " was admitted concurrently");
            } catch (java.nio.file.FileSystemException e) {
                // rename(2) onto a non-empty directory is ENOTEMPTY, which Java reports without a subclass
                if (!Files.isDirectory(entry)) throw e;
                LOG.fine("cache entry " + sha256 + " was admitted concurrently");
            }
            CachedBinary b = readEntry(sha256).orElseThrow(() -> new IOException("cache entry " + entry + " unreadable"));
            addOwner(sha256, tenant); // when the entry was there before: one more owner
            index.put(sha256, b);
            evict(sha256, tenant);
            return b;
        } finally {
            Files.deleteIfExists(uploaded);
            deleteTree(staging);
        }
    }

    /** After an admission by {@code tenant}: its own entries, then everybody's, back within their budgets. */
    private void evict(String admitted, String tenant) throws IOException {
        synchronized (ownersLock) {
            List<LruEntries.Entry> all = lru.entries();
            if (tenantDiskBytes > 0) {
                List<LruEntries.Entry> own = all.stream()
                        .filter(e -> !publicHashes.contains(e.sha256()) && owners(e.sha256()).equals(Set.of(tenant))).toList();
                lru.evict(own, tenantDiskBytes, Set.of(admitted), " of tenant " + tenant + ", past cache.tenant_disk_bytes");
                all = lru.entries();
            }
            lru.evict(all, diskBytes, Set.of(admitted), ", past cache.disk_bytes");
        }
        index.asMap().keySet().removeIf(sha -> !Files.isDirectory(dir.resolve(sha)));
    }

    private Optional<CachedBinary> readEntry(String sha256) {
        Path entry = dir.resolve(sha256);
        Path meta = entry.resolve(META);
        if (!Files.isRegularFile(meta)) return Optional.empty();
        try (Reader r = Files.newBufferedReader(meta, StandardCharsets.UTF_8)) {
            Properties p = new Properties();
            p.load(r);
            Path rewritten = entry.resolve(REWRITTEN);
            if (!sha256.equals(p.getProperty("sha256")) || !Files.isRegularFile(rewritten)) {
                throw new IOException("inconsistent");
            }
            return Optional.of(new CachedBinary(sha256, p.getProperty("name", ""), entry.resolve(ORIGINAL), rewritten,
                    Long.parseLong(p.getProperty("original_bytes")), Long.parseLong(p.getProperty("rewritten_bytes"))));
        } catch (IOException | RuntimeException e) {
            // entries are renamed into place whole, so this is outside damage; drop it and rebuild on upload
            LOG.warning("dropping damaged cache entry " + entry + ": " + e.getMessage());
            deleteTree(entry);
            return Optional.empty();
        }
    }

    private static void writeMeta(Path staging, String sha256, String name, long originalBytes, long rewrittenBytes)
            throws IOException {
        Properties p = new Properties();
        p.setProperty("sha256", sha256);
        p.setProperty("name", name);
        p.setProperty("original_bytes", Long.toString(originalBytes));
        p.setProperty("rewritten_bytes", Long.toString(rewrittenBytes));
        p.setProperty("created", java.time.Instant.now().toString());
        try (Writer w = Files.newBufferedWriter(staging.resolve(META), StandardCharsets.UTF_8)) {
            p.store(w, "vmcuda binary cache entry");
        }
    }

    /** Staging directories and uploads of a previous run that died mid-way. */
    private void removeLeftovers() throws IOException {
        try (Stream<Path> s = Files.list(dir)) {
            s.filter(p -> p.getFileName().toString().startsWith(STAGING_PREFIX)).forEach(BinaryCache::deleteTree);
        }
        deleteTree(uploadDir());
    }

    /** Deletes a directory tree (links are removed, not followed); logs what it could not delete. */
    public static void deleteTree(Path root) {
        if (!Files.exists(root)) return;
        try (Stream<Path> s = Files.walk(root)) {
            s.sorted(Comparator.reverseOrder()).forEach(p -> {
                try {
                    Files.deleteIfExists(p);
                } catch (IOException e) {
                    throw new UncheckedIOException(e);
                }
            });
        } catch (IOException | UncheckedIOException e) {
            LOG.warning("could not delete " + root + ": " + e.getMessage());
        }
    }
}
