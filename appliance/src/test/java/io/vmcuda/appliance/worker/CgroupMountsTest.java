package io.vmcuda.appliance.worker;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Finding the daemon's own cgroup directories on the host layouts it meets (texts as the kernel writes them). */
class CgroupMountsTest {
    /** A current distribution, the daemon a systemd service: v2 only. */
    @Test
    void unifiedOnly() {
        CgroupMounts m = CgroupMounts.parse("0::/system.slice/vmcudad.service\n",
                "24 30 0:22 / /sys rw,nosuid - sysfs sysfs rw\n"
                        + "35 24 0:30 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:9 - cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot\n");
        assertEquals(Path.of("/sys/fs/cgroup/system.slice/vmcudad.service"), m.unified());
        assertTrue(m.v1().isEmpty());
    }

    /** Older "hybrid" hosts: v1 trees per controller (some co-mounted) and a unified tree beside them. */
    @Test
    void hybridWithCoMountedControllers() {
        CgroupMounts m = CgroupMounts.parse("""
                12:pids:/system.slice/vmcudad.service
                4:memory:/system.slice/vmcudad.service
                3:cpu,cpuacct:/system.slice/vmcudad.service
                1:name=systemd:/system.slice/vmcudad.service
                0::/system.slice/vmcudad.service
                """, """
                30 24 0:26 / /sys/fs/cgroup ro,nosuid,nodev,noexec shared:9 - tmpfs tmpfs ro,mode=755
                31 30 0:27 / /sys/fs/cgroup/unified rw,nosuid,nodev,noexec,relatime shared:10 - cgroup2 cgroup2 rw,nsdelegate
                35 30 0:31 / /sys/fs/cgroup/cpu,cpuacct rw,nosuid,nodev,noexec,relatime shared:15 - cgroup cgroup rw,cpu,cpuacct
                36 30 0:32 / /sys/fs/cgroup/memory rw,nosuid,nodev,noexec,relatime shared:16 - cgroup cgroup rw,memory
                40 30 0:36 / /sys/fs/cgroup/pids rw,nosuid,nodev,noexec,relatime shared:20 - cgroup cgroup rw,pids
                """);
        assertEquals(Path.of("/sys/fs/cgroup/unified/system.slice/vmcudad.service"), m.unified());
        assertEquals(Map.of("pids", Path.of("/sys/fs/cgroup/pids/system.slice/vmcudad.service"),
                "memory", Path.of("/sys/fs/cgroup/memory/system.slice/vmcudad.service"),
                "cpu", Path.of("/sys/fs/cgroup/cpu,cpuacct/system.slice/vmcudad.service"),
                "cpuacct", Path.of("/sys/fs/cgroup/cpu,cpuacct/system.slice/vmcudad.service")), m.v1());
    }

    /**
     * A container that sees a part of the tree (its mount's root is its own cgroup), and a mount point with a
     * space written as \040.
     */
    @Test
    void aMountShowingPartOfTheTree() {
        CgroupMounts m = CgroupMounts.parse("0::/kubepods/pod1/ctr\n",
                "50 40 0:30 /kubepods/pod1 /sys/fs/cgroup\\040x rw - cgroup2 cgroup2 rw\n");
        assertEquals(Path.of("/sys/fs/cgroup x/ctr"), m.unified());
        // a cgroup outside what the mount shows has no directory there
        CgroupMounts other = CgroupMounts.parse("0::/elsewhere\n", "50 40 0:30 /kubepods/pod1 /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n");
        assertNull(other.unified());
    }

    /** The tightest limit on the way up: a container's, though its own cgroup says "max". */
    @Test
    void theMemoryLimitIsTheTightestOfTheAncestors(@org.junit.jupiter.api.io.TempDir Path root) throws Exception {
        Path container = java.nio.file.Files.createDirectories(root.resolve("kubepods/ctr"));
        Path own = java.nio.file.Files.createDirectories(container.resolve("vmcudad"));
        java.nio.file.Files.writeString(root.resolve("kubepods/memory.max"), "8589934592\n");
        java.nio.file.Files.writeString(container.resolve("memory.max"), "1073741824\n");
        java.nio.file.Files.writeString(own.resolve("memory.max"), "max\n");
        assertEquals(java.util.OptionalLong.of(1L << 30), new CgroupMounts(own, Map.of()).memoryLimit());
        java.nio.file.Files.writeString(container.resolve("memory.max"), "max\n");
        assertEquals(java.util.OptionalLong.of(8L << 30), new CgroupMounts(own, Map.of()).memoryLimit());
        // v1 writes "no limit" as a number just below 2^63
        Path v1 = java.nio.file.Files.createDirectories(root.resolve("v1/own"));
        java.nio.file.Files.writeString(v1.resolve("memory.limit_in_bytes"), "9223372036854771712\n");
        assertEquals(java.util.OptionalLong.empty(), new CgroupMounts(null, Map.of("memory", v1)).memoryLimit());
        assertEquals(java.util.OptionalLong.empty(), new CgroupMounts(null, Map.of()).memoryLimit());
    }

    @Test
    void noCgroupsMounted() {
        CgroupMounts m = CgroupMounts.parse("0::/\n", "24 30 0:22 / /sys rw - sysfs sysfs rw\ngarbage\n\n");
        assertNull(m.unified());
        assertTrue(m.v1().isEmpty());
    }
}
