package io.vmcuda.appliance.worker;

import io.vmcuda.appliance.ApplianceConfig;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.logging.Logger;

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
 * sandbox, with the host's network. {@code auto} offers UCX only on an appliance without tenants (one
 * trusted user, as in the demo); with tenants the operator must say {@code true}, and the daemon says
 * what that means (docs/ucx.md "Security").
 */
public final class UcxAgent {
    public static final String AGENT = "vmcuda-ucx-agent";
    private static final Logger LOG = Logger.getLogger(UcxAgent.class.getName());

    private UcxAgent() {
    }

    public static Path resolve(ApplianceConfig config, Path workerLibDir) {
        String mode = config.workerUcx();
        if (mode.equals("false")) return null;
        if (mode.equals("auto") && !config.tenants().isEmpty()) {
            LOG.info("bulk copies over UCX not offered: tenants are configured, and UCX trusts its peers "
                    + "(worker.ucx = auto; set it to true on a trusted fabric, docs/ucx.md \"Security\")");
            return null;
        }
        Path agent = workerLibDir.resolve(AGENT).toAbsolutePath();
        if (Files.isExecutable(agent)) {
            LOG.info("bulk copies over UCX offered to clients (" + agent + ")");
            if (!config.tenants().isEmpty()) {
                LOG.warning("worker.ucx = true with tenants: UCX trusts its peers, so a tenant's client (or anyone "
                        + "who reaches a session's UCX agent) can read and write that agent's memory and run code in "
                        + "it, as the session's uid outside the worker sandbox, with this host's network; offer UCX "
                        + "to tenants only on a fabric you trust (docs/ucx.md \"Security\")");
            }
            return agent;
        }
        if (mode.equals("true")) {
            throw new IllegalStateException("worker.ucx = true but " + agent + " is missing (it is built next to "
                    + "libvmcuda-worker.so); install it or set worker.ucx = auto or false");
        }
        LOG.info("bulk copies over UCX not offered: " + agent + " is missing (worker.ucx = auto)");
        return null;
    }
}
