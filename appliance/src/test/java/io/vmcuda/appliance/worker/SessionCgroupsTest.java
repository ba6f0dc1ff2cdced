package io.vmcuda.appliance.worker;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * Session cgroups on this machine's real cgroup tree (v2, or v1 as on the CI machine); needs root. A process
 * started into a session's cgroup (as an unsandboxed worker is) is limited there, killed when the session's
 * cgroup closes, and the directories go; what a daemon no longer running left is removed at the next start.
 */
class SessionCgroupsTest {
    /** Session cgroups below this process's own (128 MiB, 64 processes, CPU weight 50); UcxAgentTest uses them too. */
    static SessionCgroups openHere() throws Exception {
        return SessionCgroups.open(CgroupMounts.parse(Files.readString(Path.of("/proc/self/cgroup")),
                Files.readString(Path.of("/proc/self/mountinfo"))), 128L << 20, 64, 50);
    }

    @Test
    void aSessionsProcessesAreLimitedAndKilledWithItsCgroup() throws Exception {
        assumeTrue(Sandbox.currentUid() == 0, "writing cgroups needs root");
        SessionCgroups cgroups = openHere();
        SessionCgroup cg = cgroups.create(0xabcdefL);
        List<Path> dirs = cg.dirs();
        assertFalse(dirs.isEmpty());
        for (Path d : dirs) assertTrue(d.getFileName().toString().equals("session-abcdef"), d.toString());
        String limits = "";
        for (Path d : dirs) {
            for (String f : List.of("memory.max", "memory.limit_in_bytes", "pids.max", "cpu.weight", "cpu.shares")) {
                if (Files.exists(d.resolve(f))) limits += f + "=" + Files.readString(d.resolve(f)).trim() + " ";
            }
        }
        assertTrue(limits.matches(".*memory\\.(max|limit_in_bytes)=134217728 .*"), limits);
        assertTrue(limits.contains("pids.max=64 "), limits);
        assertTrue(limits.contains("cpu.weight=50 ") || limits.contains("cpu.shares=512 "), limits);

        // a worker and a child it left behind (daemonised: not the worker's child any more)
        Process worker = new ProcessBuilder(WorkerLauncher.command("w", Path.of("/bin/sh"), dirs)).start();
        worker.getOutputStream().write("(sleep 600 &) ; sleep 600\n".getBytes());
        worker.getOutputStream().close();
        List<Long> inside = List.of();
        for (int i = 0; i < 50 && inside.size() < 3; i++) {
            Thread.sleep(100);
            inside = CgroupFiles.pids(dirs.get(0));
        }
        assertTrue(inside.size() >= 3, "the shell, its sleep and the left-behind sleep are in the session: " + inside);
        cg.close();
        assertTrue(worker.waitFor(10, TimeUnit.SECONDS));
        for (long pid : inside) assertFalse(running(pid), "pid " + pid + " killed");
        for (Path d : dirs) assertFalse(Files.exists(d), d + " removed");
        cgroups.close();
    }

    @Test
    void whatADaemonNoLongerRunningLeftIsRemoved() throws Exception {
        assumeTrue(Sandbox.currentUid() == 0, "writing cgroups needs root");
        SessionCgroups first = openHere();
        SessionCgroup cg = first.create(7);
        Path stale = cg.dirs().get(0).getParent().resolveSibling("daemon-999999999");
        Files.createDirectories(stale.resolve("session-1"));
        openHere(); // as the next daemon would (this process's own directory stays: it is still running)
        assertFalse(Files.exists(stale), "a dead daemon's directory is swept");
        assertTrue(Files.exists(cg.dirs().get(0)), "a live daemon's sessions are not touched");
        cg.close();
        first.close();
        assertFalse(Files.exists(cg.dirs().get(0).getParent()));
    }

    /** Still running: not gone and not a zombie waiting for its parent (an orphan's new parent reaps when it likes). */
    private static boolean running(long pid) throws java.io.IOException {
        String s;
        try {
            s = Files.readString(Path.of("/proc/" + pid + "/stat"));
        } catch (java.nio.file.NoSuchFileException gone) {
            return false;
        }
        return !s.substring(s.lastIndexOf(')') + 2).startsWith("Z");
    }
}
