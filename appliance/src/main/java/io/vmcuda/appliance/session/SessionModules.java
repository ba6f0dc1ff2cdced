package io.vmcuda.appliance.session;

import io.netty.channel.Channel;
import io.vmcuda.appliance.cache.ModuleCache;
import io.vmcuda.appliance.worker.ModuleReplies;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.Executor;
import java.util.logging.Logger;
import java.util.stream.Stream;

/**
 * Module images between sessions and the daemon's {@link ModuleCache} (PROTOCOL.md "Worker ↔ daemon"):
 * <ul>
 * <li>lends: a cached image the worker asks for is hard-linked into the session's lend directory
 * ({@code <state>/lend/<id>}, root's, bound read-only into the sandbox), which goes with the session;</li>
 * <li>collects: images the session's clients uploaded, which its worker left in
 * {@code <session dir>/module-offers}, are admitted to the cache for the tenant when the session has ended
 * (its processes are gone and the directory is root's again, so nothing in it can change while it is read).</li>
 * </ul>
 */
final class SessionModules {
    private static final Logger LOG = Logger.getLogger(SessionModules.class.getName());
    static final String OFFERS = "module-offers"; // VMC_W_MODULE_OFFER_DIR in worker.h

    private final ModuleCache cache;
    private final Path lendRoot;
    private final Executor blocking;
    private final DaemonMetrics metrics;

    SessionModules(ModuleCache cache, Path lendRoot, Executor blocking, DaemonMetrics metrics) {
        this.cache = cache;
        this.lendRoot = lendRoot;
        this.blocking = blocking;
        this.metrics = metrics;
    }

    /** Creates the session's (empty) lend directory; null when it cannot be had (no module cache for it then). */
    Path lendDir(long sessionId) {
        Path d = lendRoot.resolve(Long.toString(sessionId));
        try {
            Files.createDirectories(lendRoot);
            Files.createDirectories(d);
            Files.setPosixFilePermissions(d, PosixFilePermissions.fromString("rwxr-xr-x"));
            return d;
        } catch (IOException e) {
            LOG.warning("session " + sessionId + ": no module cache (" + e.getMessage() + ")");
            return null;
        }
    }

    void query(Session s, String sha256, long size, Channel worker) {
        Path lend = s.lendDir();
        if (lend == null) {
            s.moduleQueryPending.set(false);
            ModuleReplies.answer(worker, sha256, false);
            return;
        }
        blocking.execute(() -> {
            Optional<Path> image = cache.lookup(sha256, size, s.tenant().name());
            boolean lent = image.isPresent() && lend(image.get(), lend.resolve(sha256));
            metrics.moduleLookup(lent, lent ? size : 0);
            s.moduleQueryPending.set(false);
            ModuleReplies.answer(worker, sha256, lent);
        });
    }

    private static boolean lend(Path image, Path target) {
        try {
            if (!Files.exists(target, LinkOption.NOFOLLOW_LINKS)) {
                try {
                    Files.createLink(target, image); // the same file system: no copy
                } catch (IOException | UnsupportedOperationException e) {
                    Files.copy(image, target);
                }
            }
            return true;
        } catch (IOException e) {
            LOG.warning("cannot lend module image " + image.getParent().getFileName() + ": " + e.getMessage());
            return false;
        }
    }

    /**
     * After the session's worker and processes are gone, on the daemon's blocking executor: collect its offers (before
     * the session's directory, a tmpfs of its own, goes), remove its loans.
     */
    void sessionEnded(Session s) {
        Path offers = s.dir().resolve(OFFERS);
        int admitted = 0;
        if (Files.isDirectory(offers, LinkOption.NOFOLLOW_LINKS)) {
            List<Path> files;
            try (Stream<Path> list = Files.list(offers)) {
                files = list.toList();
            } catch (IOException e) {
                files = List.of();
            }
            for (Path f : files) {
                String name = f.getFileName().toString();
                if (!name.matches("[0-9a-f]{64}") || !Files.isRegularFile(f, LinkOption.NOFOLLOW_LINKS)) continue;
                try {
                    String refused = cache.admit(name, Files.size(f), s.tenant().name(), f);
                    if (refused == null) admitted++;
                    else LOG.info("session " + s.id() + ": module image " + name + " not cached: " + refused);
                } catch (IOException e) {
                    LOG.info("session " + s.id() + ": module image " + name + " not cached: " + e.getMessage());
                }
            }
            io.vmcuda.appliance.cache.BinaryCache.deleteTree(offers);
        }
        if (s.lendDir() != null) io.vmcuda.appliance.cache.BinaryCache.deleteTree(s.lendDir());
        if (admitted > 0) LOG.info("session " + s.id() + ": " + admitted + " module image(s) cached for tenant "
                + s.tenant().name());
    }
}
