package io.vmcuda.appliance.control;

import io.vmcuda.appliance.cache.BinaryCache;
import io.vmcuda.appliance.session.Refusals;
import io.vmcuda.appliance.session.SessionManager;
import io.vmcuda.appliance.session.TenantConnections;
import java.util.concurrent.Executor;

/**
 * What every control connection shares. {@code blocking} runs disk work and rewriting; {@code connections}
 * caps each tenant's open connections; {@code pool} is null when the appliance is not in a pool; {@code tenantView}
 * renders a tenant's view of the appliance for INFO HELLOs (null: not answered); {@code limitedLog} takes the log lines
 * any peer can cause once per connection (refused, timed out, bad token, protocol error), so that a flood of connections
 * is not a flood of log lines.
 */
record ControlContext(BinaryCache cache, SessionManager sessions, Refusals refusals, Executor blocking,
                      long binaryMaxBytes, io.vmcuda.appliance.auth.Authenticator auth,
                      java.time.Duration handshakeTimeout, io.vmcuda.appliance.auth.AuthThrottle throttle,
                      PendingHandshakes pending, TenantConnections connections, io.vmcuda.appliance.pool.Pool pool,
                      java.util.function.Function<String, String> tenantView, io.vmcuda.appliance.LogLimiter limitedLog) {
    ControlContext(BinaryCache cache, SessionManager sessions, Refusals refusals, Executor blocking, long binaryMaxBytes,
                   io.vmcuda.appliance.auth.Authenticator auth, java.time.Duration handshakeTimeout) {
        this(cache, sessions, refusals, blocking, binaryMaxBytes, auth, handshakeTimeout,
                new io.vmcuda.appliance.auth.AuthThrottle(0), PendingHandshakes.unlimited(), TenantConnections.unlimited(), null, null,
                newLimitedLog());
    }

    /** One per control port: the connections' lines appear under ControlHandler, as the others they log. */
    static io.vmcuda.appliance.LogLimiter newLimitedLog() {
        return new io.vmcuda.appliance.LogLimiter(java.util.logging.Logger.getLogger(ControlHandler.class.getName()));
    }
}
