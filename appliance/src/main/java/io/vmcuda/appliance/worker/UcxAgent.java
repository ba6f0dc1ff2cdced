package io.vmcuda.appliance.worker;

import io.vmcuda.appliance.ApplianceConfig;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.logging.Logger;
import java.util.stream.Collectors;

/**
 * Whether this appliance offers bulk copies over UCX ({@code worker.ucx}; PROTOCOL.md "Bulk copies over UCX"):
 * the path of {@code vmcuda-ucx-agent}, the process that holds each worker's UCX end point (the sandbox
 * gives the worker itself no network), or null. The agent needs UCX's libraries (Debian libucx0) at run
 * time; when they are missing it fails to start, the worker says so in the session log and the client
 * uses TCP.
 *
 * <p>UCX trusts its peers: where it emulates one-sided operations (its tcp and shared-memory transports,
 * and any peer that sends its put and get messages directly), it writes and reads the address a peer names
 * without checking it against a registration. A peer that reaches an agent can therefore read and write
 * that agent's memory, and take it over: a process running as the session's uid outside the worker's
 * sandbox, with the host's network (confined otherwise: read-only mounts, PID and IPC namespaces and a
 * system-call filter of its own; docs/ucx.md "Security"). {@code auto} offers UCX only on an appliance without tenants (one
 * trusted user, as in the demo); with tenants the operator must say {@code true}, and the daemon says
 * what that means (docs/ucx.md "Security").
 */
public final class UcxAgent {
    public static final String AGENT = "vmcuda-ucx-agent";
    private static final Logger LOG = Logger.getLogger(UcxAgent.class.getName());

    private UcxAgent() {
    }

    /**
     * The agent to offer, or null. It is offered only when its start-up check passes ({@link #probe}): with
     * workers sandboxed, in the confinement a session's agent gets; when it fails, {@code worker.ucx = true}
     * stops the daemon with the reason, {@code auto} logs it and does not offer UCX.
     */
    public static Path resolve(ApplianceConfig config, WorkerLauncher launcher) {
        String mode = config.workerUcx();
        if (mode.equals("false")) return null;
        if (mode.equals("auto") && !config.tenants().isEmpty()) {
            LOG.info("bulk copies over UCX not offered: tenants are configured, and UCX trusts its peers "
                    + "(worker.ucx = auto; set it to true on a trusted fabric, docs/ucx.md \"Security\")");
            return null;
        }
        Path agent = launcher.workerLibDir().resolve(AGENT).toAbsolutePath();
        String unusable = Files.isExecutable(agent) ? probe(agent, launcher) : agent + " is missing (it is built next to libvmcuda-worker.so)";
        if (unusable == null) {
            LOG.info("bulk copies over UCX offered to clients (" + agent + ")");
            if (!config.tenants().isEmpty()) {
                LOG.warning("worker.ucx = true with tenants: UCX trusts its peers, so a tenant's client (or anyone "
                        + "who reaches a session's UCX agent) can read and write that agent's memory and run code in "
                        + "it, as the session's uid outside the worker sandbox (sandboxed, in a confinement of its own: "
                        + "read-only mounts, PID and IPC namespaces, a system-call filter), with this host's network; offer UCX "
                        + "to tenants only on a fabric you trust (docs/ucx.md \"Security\")");
            }
            return agent;
        }
        if (mode.equals("true")) {
            throw new IllegalStateException("worker.ucx = true but UCX cannot be offered: " + unusable
                    + "; fix that (UCX's libraries: Debian libucx0; the agent: next to libvmcuda-worker.so), or set worker.ucx = auto or false");
        }
        LOG.info("bulk copies over UCX not offered: " + unusable + " (worker.ucx = auto)");
        return null;
    }

    /**
     * Checks that {@code agent} works as a session's agent would (WorkerLauncher.ucxAgentProbeCommand): with
     * workers sandboxed, {@code vmcuda-sandbox --probe --ucx-agent}, which builds the agent's confinement as for a
     * session and runs the agent's --self-test in it (a host where that confinement cannot be built would otherwise
     * fail every session's agent, and the client would see only that it stopped answering); unsandboxed,
     * {@code vmcuda-ucx-agent --probe} (UCX must load, start and make a worker). Both with the environment a
     * session's agent gets. Null when it passed, else why not (say, libucp.so.0 is not installed, or which step of
     * the confinement failed).
     */
    static String probe(Path agent, WorkerLauncher launcher) {
        Path out = null;
        SessionCgroup cgroup = null;
        long uid = launcher.allocateUid();
        try {
            // a sandboxed check runs under a session's limits, in a cgroup made as a session's (none: sessions get none)
            if (launcher.sandboxed()) cgroup = launcher.createCgroup(WorkerLauncher.PROBE_CGROUP_ID);
            List<String> cmd = launcher.ucxAgentProbeCommand(agent, uid, cgroup == null ? List.of() : cgroup.dirs());
            // its output goes to a file: read from a pipe, a probe that hangs would hold the daemon past the timeout
            out = Files.createTempFile("vmcuda-ucx-probe", ".txt");
            ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(out.toFile());
            pb.environment().clear();
            pb.environment().putAll(launcher.ucxAgentProbeEnvironment(System.getenv()));
            Process p = pb.start();
            boolean finished = p.waitFor(20, TimeUnit.SECONDS);
            if (!finished) p.destroyForcibly();
            byte[] bytes = Files.readAllBytes(out);
            List<String> lines = summary(new String(bytes, 0, Math.min(bytes.length, 4096), StandardCharsets.UTF_8));
            String text = String.join("; ", lines);
            String check = launcher.sandboxed() ? "its self-test in the confinement a sandboxed session gives it ("
                    + String.join(" ", cmd.subList(0, 2)) + " --ucx-agent)" : "its probe";
            if (!finished) return check + " did not finish within 20 s";
            if (p.exitValue() != 0) {
                return check + " failed" + (text.isEmpty() ? " (exit " + p.exitValue() + ")" : ": " + text);
            }
            LOG.info(lines.stream().map(l -> l.startsWith("vmcuda-ucx-agent: ") ? "UCX agent " + l.substring(18)
                    : l.startsWith("vmcuda-sandbox: ") ? "worker sandbox " + l.substring(16) : l).collect(Collectors.joining("; ")));
            return null;
        } catch (IOException e) {
            return "cannot run " + agent + ": " + e.getMessage();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return "interrupted while probing the UCX agent";
        } finally {
            if (cgroup != null) cgroup.close(); // its processes have exited: the directories go
            launcher.releaseProbeUid(uid);
            if (out != null) {
                try {
                    Files.deleteIfExists(out);
                } catch (IOException ignored) {
                    // a temporary file left behind is harmless
                }
            }
        }
    }

    /**
     * The probe's output lines for one log line, less the self-test's filter checks that came out right and its
     * Seccomp and NoNewPrivs lines (the checks' summary line says how many came out wrong, and each wrong one is
     * kept: "check: ...: should be denied").
     */
    static List<String> summary(String output) {
        return output.lines().map(String::strip)
                .filter(l -> !l.isEmpty() && !(l.startsWith("check: ") && !l.contains(": should be "))
                        && !l.startsWith("Seccomp:") && !l.startsWith("NoNewPrivs:"))
                .toList();
    }
}
