package io.vmcuda.appliance.admin;

import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.QueryStringDecoder;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * Routes GET /status, /status?format=table, /metrics, /health (and /healthz: the daemon answers) and /readyz (it
 * can take sessions: Readiness); everything else is 404 (or 405 for non-GET). Every request passes {@link AdminAccess} first.
 */
final class AdminHandler extends SimpleChannelInboundHandler<FullHttpRequest> {
    private static final Logger LOG = Logger.getLogger(AdminHandler.class.getName());

    private final StatusSource src;
    private final AdminAccess access;
    private final PrometheusMetrics metrics;

    AdminHandler(StatusSource src, AdminAccess access, PrometheusMetrics metrics) {
        this.src = src;
        this.access = access;
        this.metrics = metrics;
    }

    @Override
    protected void channelRead0(ChannelHandlerContext ctx, FullHttpRequest req) {
        QueryStringDecoder uri = new QueryStringDecoder(req.uri());
        FullHttpResponse resp;
        AdminAccess.Decision d = access.check(uri.path(), req.headers().get(HttpHeaderNames.AUTHORIZATION));
        if (!d.allowed()) {
            LOG.info("admin request " + uri.path() + " from " + ctx.channel().remoteAddress() + " refused (" + d.status() + ")");
            resp = text(HttpResponseStatus.valueOf(d.status()), d.reason(), "text/plain; charset=utf-8");
            if (d.status() == 401) resp.headers().set(HttpHeaderNames.WWW_AUTHENTICATE, "Bearer realm=\"vmcudad\"");
        } else if (!req.method().equals(HttpMethod.GET)) {
            resp = text(HttpResponseStatus.METHOD_NOT_ALLOWED, "only GET\n", "text/plain; charset=utf-8");
        } else if (uri.path().equals("/status")) {
            List<String> format = uri.parameters().get("format");
            if (format != null && format.contains("table")) {
                resp = text(HttpResponseStatus.OK, StatusTable.render(src), "text/plain; charset=utf-8");
            } else {
                resp = text(HttpResponseStatus.OK, StatusJson.render(src) + "\n", "application/json");
            }
        } else if (uri.path().equals("/health") || uri.path().equals("/healthz")) {
            resp = text(HttpResponseStatus.OK, "ok\n", "text/plain; charset=utf-8");
        } else if (uri.path().equals("/readyz")) {
            List<String> problems = src.readiness().problems();
            resp = problems.isEmpty() ? text(HttpResponseStatus.OK, "ready\n", "text/plain; charset=utf-8")
                    : text(HttpResponseStatus.SERVICE_UNAVAILABLE, "not ready: " + String.join("; ", problems) + "\n",
                            "text/plain; charset=utf-8");
        } else if (uri.path().equals("/metrics")) {
            resp = metrics();
        } else {
            resp = text(HttpResponseStatus.NOT_FOUND, "not found; try /status, /status?format=table, /metrics, /healthz or /readyz\n",
                    "text/plain; charset=utf-8");
        }
        boolean keepAlive = HttpUtil.isKeepAlive(req);
        HttpUtil.setKeepAlive(resp, keepAlive);
        var f = ctx.writeAndFlush(resp);
        if (!keepAlive) f.addListener(ChannelFutureListener.CLOSE);
    }

    /** /metrics; a series that cannot be rendered is the operator's to see (500 and a log line), not an empty reply. */
    private FullHttpResponse metrics() {
        try {
            return text(HttpResponseStatus.OK, metrics.render(), "text/plain; version=0.0.4; charset=utf-8");
        } catch (RuntimeException e) {
            LOG.warning("/metrics could not be rendered: " + e);
            return text(HttpResponseStatus.INTERNAL_SERVER_ERROR, "metrics could not be rendered: " + e.getMessage() + "\n",
                    "text/plain; charset=utf-8");
        }
    }

    private static FullHttpResponse text(HttpResponseStatus status, String body, String contentType) {
        FullHttpResponse r = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, status,
                Unpooled.copiedBuffer(body, StandardCharsets.UTF_8));
        r.headers().set(HttpHeaderNames.CONTENT_TYPE, contentType);
        HttpUtil.setContentLength(r, r.content().readableBytes());
        return r;
    }

    /** No complete request within AdminServer.IDLE_TIMEOUT (the IdleStateHandler before this one says so). */
    @Override
    public void userEventTriggered(ChannelHandlerContext ctx, Object evt) throws Exception {
        if (evt instanceof io.netty.handler.timeout.IdleStateEvent) {
            ctx.close();
            return;
        }
        super.userEventTriggered(ctx, evt);
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
        LOG.log(Level.FINE, "admin connection failed", cause);
        ctx.close();
    }
}
