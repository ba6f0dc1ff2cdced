package io.vmcuda.appliance.control;

import io.netty.channel.ChannelHandler;
import io.vmcuda.appliance.auth.Authenticator;
import io.vmcuda.appliance.cache.BinaryCache;
import io.vmcuda.appliance.session.Refusals;
import io.vmcuda.appliance.session.SessionManager;
import io.vmcuda.appliance.wire.FrameDecoder;
import io.vmcuda.appliance.wire.UnfinishedFrames;
import java.time.Duration;

/** Builds the daemon's real control-connection handler for in-process fuzzing (tasks run inline). */
public final class ControlFuzzSupport {
    private ControlFuzzSupport() {}

    public static ChannelHandler handler(BinaryCache cache, SessionManager sessions, Refusals refusals, long binaryMaxBytes,
                                         Authenticator auth) {
        return new ControlHandler(new ControlContext(cache, sessions, refusals, Runnable::run, binaryMaxBytes, auth,
                Duration.ofSeconds(30)));
    }

    /** The decoder and handler as ControlServer puts them in a connection's pipeline, sharing {@code budget}. */
    public static ChannelHandler[] pipeline(BinaryCache cache, SessionManager sessions, Refusals refusals,
                                            long binaryMaxBytes, Authenticator auth, UnfinishedFrames budget) {
        ControlHandler h = (ControlHandler) handler(cache, sessions, refusals, binaryMaxBytes, auth);
        return new ChannelHandler[] {new FrameDecoder(budget, h::checkFrameType), h};
    }
}
