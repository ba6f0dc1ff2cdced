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
 */
public final class UcxAgent {
    public static final String AGENT = "vmcuda-ucx-agent";
    private static final Logger LOG = Logger.getLogger(UcxAgent.class.getName());

    private UcxAgent() {
    }

    public static Path resolve(ApplianceConfig config, Path workerLibDir) {
        String mode = config.workerUcx();
        if (mode.equals("false")) return null;
        Path agent = workerLibDir.resolve(AGENT).toAbsolutePath();
        if (Files.isExecutable(agent)) {
            LOG.info("bulk copies over UCX offered to clients (" + agent + ")");
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
