package io.vmcuda.appliance.worker;

import io.vmcuda.appliance.ApplianceConfig;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.logging.Logger;

/**
 * The worker sandbox (CONFIG.md "Worker sandbox"): the native launcher {@code vmcuda-sandbox} that
 * vmcudad puts in front of every worker — private mount, network, IPC and PID namespaces, a read-only
 * view of the system, a private /tmp, the session directory as the only writable place, an
 * unprivileged user, no new privileges, process and open-file limits.
 */
public record Sandbox(Path launcher, String user, long maxProcesses, long maxOpenFiles, String tmpSize, long maxFileBytes) {
    public Sandbox(Path launcher, String user, long maxProcesses, long maxOpenFiles, String tmpSize) {
        this(launcher, user, maxProcesses, maxOpenFiles, tmpSize, 0);
    }

    private static final Logger LOG = Logger.getLogger(Sandbox.class.getName());
    public static final String LAUNCHER = "vmcuda-sandbox";

    /**
     * Decides from {@code worker.sandbox}: null when workers run unsandboxed. "auto" means on when the
     * daemon runs as root; when it does not, "auto" falls back to unsandboxed workers only on an appliance
     * without tenants (the single-user loopback set-up of the demo): with tenants, other people's code
     * would run as the daemon's own user, so the daemon does not start unless the operator says
     * {@code worker.sandbox = false}. When on, the launcher must exist and its probe must pass, else the
     * daemon does not start (a sandbox that silently is not there would be worse than none).
     */
    public static Sandbox resolve(ApplianceConfig config, Path workerLibDir) {
        String mode = config.workerSandbox();
        long uid = currentUid();
        if (mode.equals("false")) {
            LOG.warning("worker.sandbox = false: workers run as the daemon's user (uid " + uid
                    + ") with its view of the file system and network");
            return null;
        }
        if (uid != 0) {
            if (mode.equals("auto") && !config.tenants().isEmpty()) {
                throw new IllegalStateException("the daemon does not run as root (uid " + uid + "), so workers cannot "
                        + "be sandboxed, and tenants are configured: their code would run as uid " + uid
                        + ", could read the daemon's state and kill it. Run vmcudad as root, or set worker.sandbox = "
                        + "false to accept unsandboxed workers explicitly");
            }
            if (mode.equals("auto")) {
                LOG.warning("the daemon does not run as root (uid " + uid + "): workers run unsandboxed, as uid " + uid
                        + " (worker.sandbox = auto); run vmcudad as root to sandbox them");
                return null;
            }
            throw new IllegalStateException("worker.sandbox = true needs the daemon to run as root (it runs as uid " + uid
                    + "); run it as root or set worker.sandbox = false");
        }
        Path launcher = config.workerSandboxLauncher().isEmpty() ? workerLibDir.resolve(LAUNCHER)
                : Path.of(config.workerSandboxLauncher());
        if (!Files.isExecutable(launcher)) {
            throw new IllegalStateException("worker sandbox launcher " + launcher + " is missing (worker.sandbox = " + mode
                    + "; it is built next to libvmcuda-worker.so); install it, set worker.sandbox_launcher, or set "
                    + "worker.sandbox = false to run workers unsandboxed");
        }
        Sandbox s = new Sandbox(launcher.toAbsolutePath(), config.workerUser(), config.workerMaxProcesses(),
                config.workerMaxOpenFiles(), config.workerTmpSize(), config.workerMaxFileBytes());
        s.probe();
        return s;
    }

    /** Runs {@code vmcuda-sandbox --probe}: namespaces, mounts and the user must work on this host. */
    void probe() {
        try {
            Process p = new ProcessBuilder(probeCommand()).redirectErrorStream(true).start();
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
            if (!p.waitFor(20, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                throw new IllegalStateException("worker sandbox probe did not finish within 20 s");
            }
            if (p.exitValue() != 0) {
                throw new IllegalStateException("worker sandbox does not work on this host (" + out
                        + "); fix that or set worker.sandbox = false to run workers unsandboxed");
            }
            LOG.info(out.replace("vmcuda-sandbox: ", "worker sandbox "));
        } catch (IOException e) {
            throw new IllegalStateException("cannot run the worker sandbox probe " + launcher + ": " + e.getMessage(), e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while probing the worker sandbox", e);
        }
    }

    private List<String> probeCommand() {
        return new ArrayList<>(List.of(launcher.toString(), "--probe", "--user", user, "--tmp-size", tmpSize));
    }

    /**
     * {@code vmcuda-sandbox --probe} that also builds the confinement a session's UCX agent gets, with the options a
     * session's command line gives it ({@link #command}: the same {@code keep} and {@code hide}, worker.max_open_files,
     * worker.tmp_size), and runs the agent's self-test in it (sandbox_main.c, probe_ucx_agent).
     *
     * @param uid     a uid of worker.uid_range to run it as, as a session's agent runs; 0 for worker.user's
     * @param cgroups the directories of a cgroup made as a session's (SessionCgroups), which the launcher joins first;
     *                empty where sessions get none
     */
    List<String> agentProbeCommand(Path agent, List<Path> keep, Path hide, long uid, List<Path> cgroups) {
        List<String> cmd = probeCommand();
        cmd.addAll(List.of("--nofile", Long.toString(maxOpenFiles), "--ucx-agent", agent.toString()));
        if (uid > 0) cmd.addAll(List.of("--uid", Long.toString(uid)));
        for (Path c : cgroups) cmd.addAll(List.of("--cgroup", c.toString()));
        add(cmd, "--keep", keep);
        if (hide != null) add(cmd, "--hide", List.of(hide));
        return cmd;
    }

    /** {@code option} and the absolute path, once for each of {@code paths}. */
    private static void add(List<String> cmd, String option, List<Path> paths) {
        for (Path p : paths) {
            cmd.add(option);
            cmd.add(p.toAbsolutePath().toString());
        }
    }

    /**
     * The launcher's command line in front of the worker executable; each of {@code regions} (shm.regions)
     * becomes a {@code --region}, which the launcher opens read-write as root and hands to the worker.
     */
    List<String> command(Path workDir, List<Path> keep, List<Path> regions, Path executable, String argv0) {
        return command(workDir, keep, regions, executable, argv0, 0, null, null, null, List.of());
    }

    /**
     * @param uid  the session's own uid (worker.uid_range), 0 for worker.user's
     * @param hide a directory above workDir the worker must not see (the daemon's state directory), or null
     * @param lend a directory below {@code hide} the worker may read (module images the daemon lends it), or null
     * @param ucxAgent vmcuda-ucx-agent, which the launcher starts outside the sandbox for the worker, or null
     * @param cgroups  the session's cgroup directories, which the launcher joins before it starts anything
     */
    List<String> command(Path workDir, List<Path> keep, List<Path> regions, Path executable, String argv0, long uid,
                         Path hide, Path lend, Path ucxAgent, List<Path> cgroups) {
        List<String> cmd = new ArrayList<>(List.of(launcher.toString(), "--user", user, "--workdir",
                workDir.toAbsolutePath().toString(), "--nproc", Long.toString(maxProcesses), "--nofile",
                Long.toString(maxOpenFiles), "--tmp-size", tmpSize));
        if (maxFileBytes > 0) {
            cmd.add("--fsize");
            cmd.add(Long.toString(maxFileBytes));
        }
        if (uid > 0) {
            cmd.add("--uid");
            cmd.add(Long.toString(uid));
        }
        if (hide != null) {
            add(cmd, "--hide", List.of(hide));
            if (lend != null) add(cmd, "--lend", List.of(lend));
        }
        add(cmd, "--keep", keep);
        for (Path r : regions) {
            cmd.add("--region");
            cmd.add(r.toString());
        }
        if (ucxAgent != null) {
            cmd.add("--ucx-agent");
            cmd.add(ucxAgent.toString());
        }
        for (Path c : cgroups) {
            cmd.add("--cgroup");
            cmd.add(c.toString());
        }
        cmd.add("--");
        cmd.add(executable.toAbsolutePath().toString());
        cmd.add(argv0);
        return cmd;
    }

    /** The daemon's uid (0 = root), from the owner of /proc/self. */
    public static long currentUid() {
        try {
            return ((Number) Files.getAttribute(Path.of("/proc/self"), "unix:uid")).longValue();
        } catch (IOException | RuntimeException e) {
            return -1;
        }
    }
}
