package io.vmcuda.appliance.cache;

import java.io.IOException;
import java.io.InputStream;
import java.nio.channels.Channels;
import java.nio.channels.SeekableByteChannel;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.FileTime;
import java.security.DigestInputStream;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import java.util.logging.Logger;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * Module images of the driver front end (fat binaries, cubins, PTX that programs and CUDA libraries load),
 * by SHA-256, kept across sessions so that a program's second start sends none of them
 * (PROTOCOL.md "Driver front end", cache.module_bytes). Layout: {@code <dir>/<sha256>/image} and
 * {@code tenants} (one name per line). As for binaries, an entry serves only the tenants that uploaded its
 * bytes (or every tenant when the operator listed it in cache.public_sha256): any other tenant uploads it
 * once and becomes an owner, and learns nothing about what others load.
 * <p>Workers are tenant code: what a worker offers is read without following links, only when it is a
 * regular file of the announced size, and admitted only when its SHA-256 is the announced one and its first
 * bytes look like an image ({@link ModuleImages#looksLoadable}). What a tenant holds is kept within its share
 * (cache.module_tenant_bytes) and the whole within the budget (cache.module_bytes), so that one tenant's offers
 * push out its own entries, not other tenants' ({@link ModuleEviction}). Blocking: call off the network threads.
 */
public final class ModuleCache {
    private static final Logger LOG = Logger.getLogger(ModuleCache.class.getName());
    private static final Pattern SHA256_HEX = Pattern.compile("[0-9a-f]{64}");
    static final String IMAGE = "image";
    private static final String STAGING_PREFIX = ".tmp-";

    private final Path dir;
    private final long budgetBytes;
    /** What one tenant's entries may take (cache.module_tenant_bytes); 0: no share. Follows a reload. */
    private volatile long tenantBytes;
    private final Set<String> publicHashes;
    private final ModuleOwners owners;
    private final ModuleEviction eviction;

    /** A cache without tenant shares (vmcudad cache seed, a single tenant). */
    public ModuleCache(Path dir, long budgetBytes, Set<String> publicHashes) throws IOException {
        this(dir, budgetBytes, 0, publicHashes);
    }

    /**
     * @param budgetBytes what all entries may take (cache.module_bytes)
     * @param tenantBytes what the entries one tenant holds may take (cache.module_tenant_bytes); 0: no share
     */
    public ModuleCache(Path dir, long budgetBytes, long tenantBytes, Set<String> publicHashes) throws IOException {
        this.dir = dir;
        this.budgetBytes = budgetBytes;
        this.publicHashes = Set.copyOf(publicHashes);
        this.owners = new ModuleOwners(dir);
        this.eviction = new ModuleEviction(new LruEntries(dir, "module cache", entry -> entry.resolve(IMAGE)), owners,
                this.publicHashes);
        limitTenants(tenantBytes);
        Files.createDirectories(dir);
        try (Stream<Path> s = Files.list(dir)) {
            s.filter(p -> p.getFileName().toString().startsWith(STAGING_PREFIX)).forEach(BinaryCache::deleteTree);
        }
    }

    /** Sets each tenant's share (a reload: the number of tenants may have changed); applies from the next admission. */
    public void limitTenants(long tenantBytes) {
        this.tenantBytes = tenantBytes;
    }

    /** The image with this hash and size when {@code tenant} may have it. */
    public synchronized Optional<Path> lookup(String sha256, long size, String tenant) {
        Path image = SHA256_HEX.matcher(sha256).matches() ? dir.resolve(sha256).resolve(IMAGE) : null;
        try {
            Set<String> held = image == null ? Set.of() : owners.of(sha256);
            if (image != null && Files.isRegularFile(image, LinkOption.NOFOLLOW_LINKS) && Files.size(image) == size
                    && (publicHashes.contains(sha256) || held.contains(tenant) || held.contains(ModuleOwners.PUBLIC))) {
                Files.setLastModifiedTime(image, FileTime.fromMillis(System.currentTimeMillis())); // recently used
                return Optional.of(image);
            }
        } catch (IOException e) {
            LOG.warning("module cache entry " + sha256 + " unreadable: " + e.getMessage());
        }
        return Optional.empty();
    }

    /**
     * Admits the file a worker of {@code tenant} offers as the image {@code sha256} of {@code size} bytes, or
     * makes the tenant one more owner of the entry. Returns why it was refused, or null.
     */
    public String admit(String sha256, long size, String tenant, Path offered) {
        if (!SHA256_HEX.matcher(sha256).matches()) return "not a SHA-256";
        if (size <= 0 || size > budgetBytes) return "size " + size + " outside 1.." + budgetBytes + " (cache.module_bytes)";
        long share = tenant.equals(ModuleOwners.PUBLIC) ? 0 : tenantBytes;
        if (share > 0 && size > share) return "size " + size + " past the tenant's share, " + share + " (cache.module_tenant_bytes)";
        Path staging = dir.resolve(STAGING_PREFIX + sha256 + "-" + UUID.randomUUID());
        try {
            Files.createDirectories(staging);
            Path copy = staging.resolve(IMAGE);
            // no link is followed, only a regular file of the announced size is read (a FIFO would block the
            // open: the caller hands over files nobody can change any more), and its hash must match
            if (!Files.isRegularFile(offered, LinkOption.NOFOLLOW_LINKS)) return "not a regular file";
            try (SeekableByteChannel in = Files.newByteChannel(offered, Set.of(StandardOpenOption.READ,
                    LinkOption.NOFOLLOW_LINKS))) {
                if (in.size() != size) return "not " + size + " bytes long";
                MessageDigest md = MessageDigest.getInstance("SHA-256");
                try (InputStream limited = new DigestInputStream(Channels.newInputStream(in), md)) {
                    long copied = Files.copy(new BoundedInputStream(limited, size), copy);
                    if (copied != size) return "short file";
                }
                if (!HexFormat.of().formatHex(md.digest()).equals(sha256)) return "its bytes do not hash to " + sha256;
            }
            // our own copy, so what is checked is what is kept
            if (!ModuleImages.looksLoadable(copy)) return "not a module image (no fat binary, ELF file, ar archive or PTX text)";
            // lent to workers, which run as their sessions' own uids: readable by all, whatever the umask
            Files.setPosixFilePermissions(copy, java.nio.file.attribute.PosixFilePermissions.fromString("rw-r--r--"));
            synchronized (this) {
                Path entry = dir.resolve(sha256);
                if (!Files.isDirectory(entry)) {
                    ModuleOwners.writeFirst(staging, tenant);
                    Files.move(staging, entry, StandardCopyOption.ATOMIC_MOVE);
                } else {
                    owners.add(sha256, tenant);
                }
                eviction.after(sha256, tenant, budgetBytes, share);
            }
            return null;
        } catch (IOException e) {
            return "cannot store it: " + e.getMessage();
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("every Java runtime has SHA-256", e);
        } finally {
            BinaryCache.deleteTree(staging);
        }
    }

    /**
     * Admits {@code image} of {@code file} as an entry every tenant may use (the operator's own copies of
     * the CUDA libraries: vmcudad cache seed). Returns its SHA-256; throws with the reason it was refused.
     */
    public String seedPublic(Path file, ModuleImages.Image image) throws IOException {
        Path staging = Files.createTempFile(dir, STAGING_PREFIX + "seed-", "");
        try {
            MessageDigest md = MessageDigest.getInstance("SHA-256");
            try (SeekableByteChannel in = Files.newByteChannel(file, StandardOpenOption.READ);
                 java.io.OutputStream out = Files.newOutputStream(staging)) {
                in.position(image.offset());
                InputStream limited = new BoundedInputStream(Channels.newInputStream(in), image.length());
                byte[] buf = new byte[1 << 16];
                long copied = 0;
                for (int n; (n = limited.read(buf)) > 0; copied += n) {
                    md.update(buf, 0, n);
                    out.write(buf, 0, n);
                }
                if (copied != image.length()) throw new IOException("short read at offset " + image.offset());
            }
            String sha = HexFormat.of().formatHex(md.digest());
            String refused = admit(sha, image.length(), ModuleOwners.PUBLIC, staging);
            if (refused != null) throw new IOException(refused);
            return sha;
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("every Java runtime has SHA-256", e);
        } finally {
            Files.deleteIfExists(staging);
        }
    }

    /** Reads at most {@code limit} bytes, so that a file growing while it is copied cannot fill the disk. */
    private static final class BoundedInputStream extends InputStream {
        private final InputStream in;
        private long left;

        BoundedInputStream(InputStream in, long limit) {
            this.in = in;
            this.left = limit;
        }

        @Override
        public int read() throws IOException {
            if (left <= 0) return -1;
            int b = in.read();
            if (b >= 0) left--;
            return b;
        }

        @Override
        public int read(byte[] b, int off, int len) throws IOException {
            if (left <= 0) return -1;
            int n = in.read(b, off, (int) Math.min(len, left));
            if (n > 0) left -= n;
            return n;
        }
    }
}
