package io.vmcuda.appliance.worker;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Which mounts a starting daemon takes for session disks a dead daemon left (the mount itself: IsolationTest). */
class SessionDisksTest {
    private static final String MOUNTINFO = String.join("\n",
            "22 1 8:1 / / rw,relatime - ext4 /dev/sda1 rw",
            "42 22 0:39 / /var/lib/vmcuda/sessions/4238894936448876 rw,nosuid,nodev - tmpfs vmcuda-session rw,size=65536k",
            "43 22 0:40 / /var/lib/vmcuda/sessions/77 rw - tmpfs tmpfs rw",
            "44 22 0:41 / /var/lib/vmcuda/sessions/with\\040space rw - tmpfs vmcuda-session rw",
            "45 22 0:42 / /var/lib/other/sessions/5 rw - tmpfs vmcuda-session rw",
            "46 22 0:43 / /var/lib/vmcuda/sessions rw - tmpfs vmcuda-session rw",
            "47 22 0:44 / /var/lib/vmcuda/sessions/9 rw shared:5 master:1 - tmpfs vmcuda-session rw");

    @Test
    void onlyTheSessionTmpfsBelowTheSessionsDirectoryAreTaken() {
        assertEquals(List.of(Path.of("/var/lib/vmcuda/sessions/4238894936448876"), Path.of("/var/lib/vmcuda/sessions/with space"),
                        Path.of("/var/lib/vmcuda/sessions/9")),
                SessionDisks.mountsBelow(MOUNTINFO, Path.of("/var/lib/vmcuda/sessions")));
    }
}
