package io.vmcuda.appliance.worker;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.List;
import java.util.logging.Logger;

/**
 * The cgroup directories of one session ({@link SessionCgroups#create}): one on cgroup v2, one per controller
 * tree on v1. Closing it kills whatever of the session still runs and removes the directories.
 */
public final class SessionCgroup {
    private static final Logger LOG = Logger.getLogger(SessionCgroup.class.getName());
    static final String PREFIX = "session-";
    private static final int REMOVE_TRIES = 50;     // 100 ms apart: killed processes take a moment to leave
    private final List<Path> dirs;
    private final Path memoryDir;
    private final boolean v2;
    private final long memoryMaxBytes;

    SessionCgroup(List<Path> dirs, Path memoryDir, boolean v2, long memoryMaxBytes) {
        this.dirs = dirs;
        this.memoryDir = memoryDir;
        this.v2 = v2;
        this.memoryMaxBytes = memoryMaxBytes;
    }

    /** The memory limit written for the session (worker.memory_max). */
    public long memoryMaxBytes() {
        return memoryMaxBytes;
    }

    /** What the worker joins (vmcuda-sandbox --cgroup). */
    public List<Path> dirs() {
        return List.copyOf(dirs);
    }

    /** How often the kernel's OOM killer struck in this session because it reached its memory limit. */
    public long oomKills() {
        if (memoryDir == null) return 0;
        return v2 ? CgroupFiles.keyed(memoryDir.resolve("memory.events"), "oom_kill")
                : CgroupFiles.keyed(memoryDir.resolve("memory.oom_control"), "oom_kill");
    }

    /**
     * Kills every process left in the session (a daemonised child of the tenant's code, its UCX agent) and
     * removes the directories. A directory that cannot be removed is logged and left for the next daemon start.
     */
    public void close() {
        for (Path dir : dirs) {
            try {
                killAll(dir);
                Files.delete(dir);
            } catch (NoSuchFileException gone) {
                // never made, or already removed
            } catch (IOException | RuntimeException e) {
                LOG.warning("cannot remove the session cgroup " + dir + ": " + e);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
        }
    }

    private void killAll(Path dir) throws IOException, InterruptedException {
        Path kill = dir.resolve("cgroup.kill"); // v2 on Linux 5.14+: every process at once, forks in flight included
        for (int i = 0; i < REMOVE_TRIES; i++) {
            List<Long> pids = CgroupFiles.pids(dir);
            if (pids.isEmpty()) return;
            if (v2 && Files.exists(kill)) {
                CgroupFiles.write(kill, "1");
            } else {
                for (long pid : pids) ProcessHandle.of(pid).ifPresent(ProcessHandle::destroyForcibly);
            }
            Thread.sleep(100);
        }
        throw new IOException("processes still in it after " + REMOVE_TRIES / 10 + " s: " + CgroupFiles.pids(dir));
    }
}
