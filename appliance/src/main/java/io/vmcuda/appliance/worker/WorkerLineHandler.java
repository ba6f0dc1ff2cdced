package io.vmcuda.appliance.worker;

import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.SimpleChannelInboundHandler;
import java.util.logging.Logger;

/**
 * Parses the text lines a worker writes on its Unix connection. The first line must be
 * {@code WORKER <session_id> <key>}; anything else, or a rejected key, closes the connection.
 */
final class WorkerLineHandler extends SimpleChannelInboundHandler<String> {
    private static final Logger LOG = Logger.getLogger(WorkerLineHandler.class.getName());

    private final WorkerEvents events;
    private long sessionId = -1; // -1 until the WORKER line is accepted

    WorkerLineHandler(WorkerEvents events) {
        this.events = events;
    }

    @Override
    protected void channelRead0(ChannelHandlerContext ctx, String line) {
        String[] f = line.strip().split(" ");
        if (sessionId < 0) {
            Long id = f.length == 3 && f[0].equals("WORKER") ? parseLong(f[1]) : null;
            if (id == null || id < 0 || !events.workerConnected(id, f[2], ctx.channel())) {
                LOG.warning("rejected worker connection (first line '" + abbreviate(line) + "')");
                ctx.close();
                return;
            }
            sessionId = id;
            return;
        }
        if (f.length >= 4 && f[0].equals("STATS")) {
            Long h2d = parseLong(f[1]);
            Long d2h = parseLong(f[2]);
            Long calls = parseLong(f[3]);
            io.vmcuda.appliance.session.CallLatency latency = io.vmcuda.appliance.session.CallLatency.parse(f, 4);
            if (h2d != null && d2h != null && calls != null && (f.length == 4 || latency != null)) {
                events.workerStats(sessionId, h2d, d2h, calls, latency);
                return;
            }
        } else if (f.length >= 2 && f[0].equals("ABORT")) {
            events.workerAbort(sessionId, abbreviate(line.strip().substring("ABORT ".length()).strip()));
            return;
        } else if (f.length == 3 && f[0].equals("MODULE?") && f[1].matches("[0-9a-f]{64}")) {
            Long size = parseLong(f[2]);
            if (size != null && size > 0) {
                events.workerModuleQuery(sessionId, f[1], size, ctx.channel());
                return;
            }
        } else if (f.length == 2 && f[0].equals("EXIT")) {
            Long status = parseLong(f[1]);
            if (status != null && status >= 0 && status <= 255) {
                events.programExit(sessionId, status.intValue());
                return;
            }
        } else if (f.length == 2 && f[0].equals("BYE")) {
            Long status = parseLong(f[1]);
            if (status != null) {
                events.workerBye(sessionId, status.intValue());
                return;
            }
        }
        // a newer worker may say more; the daemon only needs the lines above
        LOG.fine("session " + sessionId + ": ignoring worker line '" + abbreviate(line) + "'");
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
        LOG.warning("worker connection of session " + sessionId + ": " + cause);
        ctx.close();
    }

    private static Long parseLong(String s) {
        try {
            return Long.parseLong(s);
        } catch (NumberFormatException e) {
            return null;
        }
    }

    private static String abbreviate(String s) {
        String t = s.replaceAll("\\p{Cntrl}", "?");
        return t.length() <= 240 ? t : t.substring(0, 240) + "...";
    }
}
