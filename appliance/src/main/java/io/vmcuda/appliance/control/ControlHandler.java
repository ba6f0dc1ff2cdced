package io.vmcuda.appliance.control;

import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.handler.codec.DecoderException;
import io.vmcuda.appliance.cache.BinaryRefusedException;
import io.vmcuda.appliance.cache.BinaryUpload;
import io.vmcuda.appliance.cache.CachedBinary;
import io.vmcuda.appliance.pool.PlacementQuestion;
import io.vmcuda.appliance.pool.Pool;
import io.vmcuda.appliance.session.PlacementHint;
import io.vmcuda.appliance.session.SessionManager;
import io.vmcuda.appliance.session.SetupTimings;
import io.vmcuda.appliance.wire.Frame;
import io.vmcuda.appliance.wire.Frames;
import io.vmcuda.appliance.wire.Hello;
import io.vmcuda.appliance.wire.HelloReply;
import io.vmcuda.appliance.wire.ProtocolException;
import io.vmcuda.protocol.Wire;
import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.ScheduledFuture;
import io.vmcuda.appliance.auth.Tenant;
import java.util.concurrent.TimeUnit;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * One client connection on the control port, up to the point where a session takes it over:
 * HELLO → (SEND_BINARY → BINARY_CHUNK... → verify → check + rewrite) → (NEED_LIBRARIES → LIBRARIES → SEND_LIBRARIES
 * → BINARY_CHUNK...: {@link LibraryExchange}) → {@link SessionManager}.
 * Runs on the connection's event loop; cache look-ups and rewriting run on the blocking executor and
 * come back to the event loop. The client must stay silent while the daemon works (PROTOCOL.md step 3),
 * so any frame outside the expected phase is a protocol error.
 */
final class ControlHandler extends SimpleChannelInboundHandler<Frame> {
    private static final Logger LOG = Logger.getLogger(ControlHandler.class.getName());

    private enum Phase { AWAIT_HELLO, UPLOADING, LIBRARY_LIST, LIBRARY_UPLOAD, BUSY }

    private final ControlContext ctxShared;
    private Phase phase = Phase.AWAIT_HELLO;
    private Hello hello;
    private Tenant tenant;
    /** When the current handshake phase last made progress (connect, then each BINARY_CHUNK). */
    private long progressNanos = System.nanoTime();
    /**
     * An upload (the binary, or libraries) must average this once it has run longer than twice
     * control.handshake_timeout_s: each chunk restarts the idle timeout, so a client sending a byte every few seconds
     * kept an upload, and its connection and upload file, for as long as it liked. Far below any network a GPU
     * appliance serves (a 1 GB binary at this rate takes over four hours), far above a trickle. Twice: a client that
     * merely stops sending is told so by the idle timeout first.
     */
    static final long MIN_UPLOAD_BYTES_PER_S = 64 * 1024;
    /** When the current upload phase began, and the bytes it has received since. */
    private long transferStartNanos;
    private long transferBytes;
    private ScheduledFuture<?> timeoutCheck;
    private BinaryUpload upload;
    /** A BINARY_CHUNK accepted at its first part has parts still to come. */
    private boolean chunkOpen;
    /** The client-libraries step, while it runs; the binary and timings of the session it leads to. */
    private LibraryExchange libraries;
    private CachedBinary pendingBinary;
    private SetupTimings pendingTimings;
    private long uploadStartNanos;
    /** This connection's CHALLENGE nonce: the HELLO's proof must cover it. */
    private final byte[] challenge = new byte[Wire.CHALLENGE_BYTES];
    private java.net.InetAddress source;
    private boolean pendingHeld;
    /** What a pool's placement chose for this NEW session (its ticket), if it was sent here by one. */
    private PlacementHint placement = PlacementHint.NONE;
    private static final java.security.SecureRandom NONCES = new java.security.SecureRandom();

    ControlHandler(ControlContext shared) {
        this.ctxShared = shared;
    }

    @Override
    public void channelActive(ChannelHandlerContext ctx) throws Exception {
        progressNanos = System.nanoTime();
        source = ctx.channel().remoteAddress() instanceof java.net.InetSocketAddress a ? a.getAddress() : null;
        String full = ctxShared.pending().admit(source);
        if (full != null) {
            ctxShared.limitedLog().log(Level.WARNING, "connections refused because too many await their handshake",
                    "closing " + ctx.channel().remoteAddress() + ": " + full);
            ctxShared.refusals().metrics().handshakeRefused();
            phase = Phase.BUSY;
            ctx.channel().config().setAutoRead(false);
            ctx.writeAndFlush(Frames.error(ctx.alloc(), ProtocolException.TOO_MANY, full)).addListener(ChannelFutureListener.CLOSE);
            return;
        }
        pendingHeld = true;
        NONCES.nextBytes(challenge);
        ctx.writeAndFlush(Frames.challenge(ctx.alloc(), challenge));
        scheduleTimeoutCheck(ctx, ctxShared.handshakeTimeout().toNanos());
        super.channelActive(ctx);
    }

    /** The connection's handshake slot (PendingHandshakes) ends with its HELLO, or with the connection. */
    private void releasePending() {
        if (pendingHeld) {
            pendingHeld = false;
            ctxShared.pending().release(source);
        }
    }

    /**
     * Slow or silent clients: HELLO must arrive within control.handshake_timeout_s of connecting, and
     * during an upload each BINARY_CHUNK within that time of the previous one. While the daemon itself
     * works (cache, rewrite, GPU queue, worker start) the client is expected to be silent: no timeout.
     */
    private void scheduleTimeoutCheck(ChannelHandlerContext ctx, long delayNanos) {
        timeoutCheck = ctx.executor().schedule(() -> checkTimeout(ctx), Math.max(delayNanos, 1_000_000),
                TimeUnit.NANOSECONDS);
    }

    private void checkTimeout(ChannelHandlerContext ctx) {
        if (!ctx.channel().isActive() || phase == Phase.BUSY) return;
        long limit = ctxShared.handshakeTimeout().toNanos();
        long now = System.nanoTime();
        long idle = now - progressNanos;
        String msg = null;
        if (idle < limit && (phase == Phase.UPLOADING || phase == Phase.LIBRARY_UPLOAD)) { // a silent client: below
            long running = now - transferStartNanos;
            if (running > 2 * limit && transferBytes < MIN_UPLOAD_BYTES_PER_S * (double) running / 1e9) {
                msg = "upload too slow: " + transferBytes + " bytes in " + running / 1_000_000_000L + " s; an upload must average "
                        + MIN_UPLOAD_BYTES_PER_S / 1024 + " KiB/s once it has run twice control.handshake_timeout_s";
            }
        }
        if (msg == null && idle < limit) {
            scheduleTimeoutCheck(ctx, limit - idle);
            return;
        }
        if (msg == null) {
            String what = phase == Phase.AWAIT_HELLO ? "no HELLO" : phase == Phase.LIBRARY_LIST ? "no LIBRARIES" : "no BINARY_CHUNK";
            msg = what + " within " + ctxShared.handshakeTimeout().toSeconds() + " s (appliance setting control.handshake_timeout_s)";
        }
        ctxShared.limitedLog().log(Level.INFO, "handshakes timed out", "closing " + ctx.channel().remoteAddress() + ": " + msg);
        ctxShared.refusals().metrics().handshakeTimeout();
        phase = Phase.BUSY;
        closeUpload();
        ctx.channel().config().setAutoRead(false);
        ctx.writeAndFlush(Frames.error(ctx.alloc(), ProtocolException.TIMEOUT, msg)).addListener(ChannelFutureListener.CLOSE);
    }

    /**
     * Called by the FrameDecoder with each header, before any payload is kept: a frame this phase does not take is
     * refused now (the checks of {@link #channelRead0} would refuse it only once the client had sent all of it).
     */
    void checkFrameType(int type) {
        int wanted = switch (phase) {
            case AWAIT_HELLO -> Wire.TYPE_HELLO;
            case UPLOADING, LIBRARY_UPLOAD -> Wire.TYPE_BINARY_CHUNK;
            case LIBRARY_LIST -> Wire.TYPE_LIBRARIES;
            case BUSY -> -1;
        };
        if (type == wanted) return;
        if (wanted < 0) {
            throw new ProtocolException(ProtocolException.UNEXPECTED, "frame type " + type + " sent before the daemon replied");
        }
        throw new ProtocolException(ProtocolException.UNEXPECTED, "expected " + switch (wanted) {
            case Wire.TYPE_HELLO -> "HELLO";
            case Wire.TYPE_LIBRARIES -> "LIBRARIES";
            default -> "BINARY_CHUNK";
        } + ", got frame type " + type);
    }

    @Override
    protected void channelRead0(ChannelHandlerContext ctx, Frame frame) throws IOException {
        if (!frame.firstPart()) { // the rest of a BINARY_CHUNK, which the decoder passes on as it arrives
            if (chunkOpen && (phase == Phase.UPLOADING || phase == Phase.LIBRARY_UPLOAD)) continueChunk(ctx, frame);
            // else the chunk was refused, or the connection timed out or failed meanwhile: it is closing
            return;
        }
        switch (phase) {
            case AWAIT_HELLO:
                expect(frame, Wire.TYPE_HELLO, "HELLO");
                onHello(ctx, Hello.parse(frame.payload()));
                break;
            case UPLOADING:
                expectChunk(frame);
                try {
                    upload.checkRoomFor(frame.length()); // before any byte of it is stored, as when chunks came whole
                } catch (BinaryRefusedException e) {
                    refuse(ctx, e.getMessage());
                    return;
                }
                continueChunk(ctx, frame);
                break;
            case LIBRARY_LIST:
                expect(frame, Wire.TYPE_LIBRARIES, "LIBRARIES");
                onLibraryList(ctx, io.vmcuda.appliance.wire.LibraryList.parse(frame.payload()));
                break;
            case LIBRARY_UPLOAD:
                expectChunk(frame);
                try {
                    libraries.startChunk(frame.length());
                } catch (BinaryRefusedException | IOException e) {
                    refuseLibrary(ctx, e);
                    return;
                }
                continueChunk(ctx, frame);
                break;
            default:
                throw new ProtocolException(ProtocolException.UNEXPECTED,
                        "frame type " + frame.type() + " sent before the daemon replied");
        }
    }

    private static void expect(Frame f, int type, String name) {
        if (f.type() != type) {
            throw new ProtocolException(ProtocolException.UNEXPECTED, "expected " + name + ", got frame type " + f.type());
        }
    }

    /**
     * Each chunk restarts the upload's timeout (control.handshake_timeout_s), so each must carry bytes: empty ones sent
     * every few seconds kept an upload, and its connection, open for as long as the client liked.
     */
    private static void expectChunk(Frame f) {
        expect(f, Wire.TYPE_BINARY_CHUNK, "BINARY_CHUNK");
        if (f.length() == 0) {
            throw new ProtocolException(ProtocolException.MALFORMED, "empty BINARY_CHUNK (every chunk of an upload carries bytes)");
        }
    }

    private void onHello(ChannelHandlerContext ctx, Hello h) throws IOException {
        hello = h;
        phase = Phase.BUSY;
        releasePending();
        if (h.protoVersion() != Wire.PROTO_VERSION) {
            refuse(ctx, "protocol version " + h.protoVersion() + ", appliance speaks " + Wire.PROTO_VERSION);
            return;
        }
        long now = System.nanoTime();
        long locked = ctxShared.auth().required() ? ctxShared.throttle().lockedSeconds(source, now) : 0;
        if (locked > 0) {
            ctxShared.refusals().metrics().authFailure();
            refuse(ctx, "too many failed authentications from " + source.getHostAddress() + "; try again in " + locked
                    + " s (appliance setting control.auth_failures_per_minute)");
            return;
        }
        tenant = h.role() == Wire.ROLE_JOIN ? ctxShared.auth().authenticateJoin(challenge, h.signed(), h.proof())
                : ctxShared.auth().authenticate(challenge, h.signed(), h.proof());
        if (tenant == null) {
            ctxShared.refusals().metrics().authFailure();
            ctxShared.throttle().failed(source, now);
            ctxShared.limitedLog().log(Level.WARNING, "authentication failures", "authentication failure from "
                    + ctx.channel().remoteAddress() + ": " + (h.anonymous() ? "no token" : "unknown token") + " (program '"
                    + h.name().replaceAll("\\p{Cntrl}", "?") + "')");
            refuse(ctx, "bad token");
            return;
        }
        // from here the connection counts against its tenant's cap on open connections (NEW and JOIN alike)
        java.util.concurrent.CompletableFuture<String> admitted = ctxShared.connections().admit(tenant, ctx.channel());
        if (admitted.isDone()) {
            afterAdmission(ctx, h, admitted.join());
        } else {
            admitted.whenComplete((why, e) -> ctx.executor().execute(() ->
                    afterAdmission(ctx, h, e != null ? "connection cap check failed: " + e : why)));
        }
    }

    /** {@code capRefusal}: why the tenant may not open another connection now, or null. */
    private void afterAdmission(ChannelHandlerContext ctx, Hello h, String capRefusal) {
        if (!ctx.channel().isActive()) return;
        if (capRefusal != null) {
            // logged once per burst by TenantConnections, not once per connection
            phase = Phase.BUSY;
            closeUpload();
            ctxShared.refusals().refuse(ctx.channel(), capRefusal, false);
            return;
        }
        if (h.role() == Wire.ROLE_JOIN) {
            ctxShared.sessions().join(ctx.channel(), h.sessionId(), h.sessionKey(),
                    ctxShared.auth().required() ? tenant : null);
            return;
        }
        if (h.role() == Wire.ROLE_INFO) {
            answerInfo(ctx);
            return;
        }
        if (h.role() != Wire.ROLE_NEW && h.role() != Wire.ROLE_PLACE) {
            refuse(ctx, "unknown HELLO role " + h.role());
            return;
        }
        long max = ctxShared.binaryMaxBytes();
        if (h.binarySize() < 0 || h.binarySize() > max) {
            refuse(ctx, "binary size " + Long.toUnsignedString(h.binarySize()) + " bytes outside 0.." + max
                    + " (appliance setting binary.max_bytes)");
            return;
        }
        long wanted = h.gpusWanted() == 0 ? 1 : h.gpusWanted();
        if (tenant.maxGpus() > 0 && wanted > tenant.maxGpus()) {
            refuse(ctx, "tenant '" + tenant.name() + "' may use at most " + tenant.maxGpus()
                    + " GPU(s) per session; the program asked for " + wanted + " (appliance setting tenant."
                    + tenant.name() + ".max_gpus)");
            return;
        }
        if (h.role() == Wire.ROLE_PLACE) {
            answerPlacement(ctx, h, (int) Math.min(wanted, Integer.MAX_VALUE));
            return;
        }
        if (tenant.maxSessions() > 0 && ctxShared.sessions().tenantSessions(tenant) >= tenant.maxSessions()) {
            refuse(ctx, SessionManager.sessionCapMessage(tenant));
            return;
        }
        Pool pool = ctxShared.pool();
        if (h.sessionId() != 0 && pool != null) {
            // sent here by a placement of the pool: its ticket names the GPUs chosen for this client
            long ticket = h.sessionId();
            pool.ticketGpus(ticket, tenant.name()).whenComplete((gpus, e) -> ctx.executor().execute(() -> {
                // only this tenant's live ticket for this appliance is this session's to use up
                if (gpus != null && gpus.isPresent()) placement = new PlacementHint(gpus.get(), () -> pool.ticketUsed(ticket));
                if (ctx.channel().isActive()) openOrLookUp(ctx, h, wanted);
                else placementDecided();
            }));
            return;
        }
        openOrLookUp(ctx, h, wanted);
    }

    /** An INFO HELLO (`vmcuda smi`): the tenant's view of the appliance, then the connection closes. */
    private void answerInfo(ChannelHandlerContext ctx) {
        java.util.function.Function<String, String> view = ctxShared.tenantView();
        if (view == null) {
            refuse(ctx, "this appliance does not answer INFO");
            return;
        }
        String who = tenant.name();
        ctxShared.blocking().execute(() -> {
            String text = view.apply(who);
            ctx.executor().execute(() -> {
                phase = Phase.BUSY;
                ctx.writeAndFlush(Frames.helloReply(ctx.alloc(), HelloReply.info(text)))
                        .addListener(ChannelFutureListener.CLOSE);
            });
        });
    }

    /**
     * A PLACE HELLO (PROTOCOL.md "Placement in a pool"): asks the pool where this tenant's client should open
     * its session, answers PLACED with that appliance's endpoint and the ticket, and closes.
     */
    private void answerPlacement(ChannelHandlerContext ctx, Hello h, int gpus) {
        Pool pool = ctxShared.pool();
        if (pool == null) {
            refuse(ctx, "this appliance is not in a pool (its cluster.etcd is empty): connect to it with "
                    + "VMCUDA_APPLIANCE instead, or ask an appliance of the pool");
            return;
        }
        PlacementQuestion q;
        try {
            q = PlacementQuestion.parse(h.name(), gpus);
        } catch (IllegalArgumentException e) {
            refuse(ctx, "malformed placement question: " + e.getMessage());
            return;
        }
        String who = tenant.name();
        int maxSessions = tenant.maxSessions();
        ctxShared.blocking().execute(() -> {
            Pool.Answer a = pool.place(q.request(), who, maxSessions);
            ctx.executor().execute(() -> {
                if (a.refusal() != null) {
                    refuse(ctx, a.refusal());
                    return;
                }
                LOG.info("placed " + q.program().replaceAll("\\p{Cntrl}", "?") + " of tenant '" + who + "' on " + a.endpoint()
                        + " (ticket " + Long.toUnsignedString(a.ticket()) + ")");
                ctx.writeAndFlush(Frames.helloReply(ctx.alloc(), HelloReply.placed(a.ticket(), a.gpus(), a.endpoint())))
                        .addListener(ChannelFutureListener.CLOSE);
            });
        });
    }

    /** A NEW session: the plain worker, or the program's binary from the cache (or uploaded first). */
    private void openOrLookUp(ChannelHandlerContext ctx, Hello h, long wanted) {
        if (ctxShared.sessions().stopping()) { // before an upload that could only be refused at its end
            refuse(ctx, SessionManager.STOPPING);
            return;
        }
        if (h.binarySize() == 0) {
            // ships no executable (PROTOCOL.md "Session setup"): the plain worker serves the driver front end
            ctxShared.sessions().openPlain(ctx.channel(), h.name(), (int) Math.min(wanted, Integer.MAX_VALUE), tenant,
                    h.visibleDevices(), takePlacement());
            return;
        }
        String sha = h.sha256Hex();
        ctxShared.blocking().execute(() -> {
            Optional<CachedBinary> hit = ctxShared.cache().lookup(sha, tenant.name());
            ctx.executor().execute(() -> afterLookup(ctx, hit));
        });
    }

    private void afterLookup(ChannelHandlerContext ctx, Optional<CachedBinary> hit) {
        if (!ctx.channel().isActive()) return;
        if (hit.isPresent()) {
            openSession(ctx, hit.get(), SetupTimings.cacheHit());
            return;
        }
        try {
            upload = ctxShared.cache().startUpload(tenant.name(), hello.binarySize(), hello.sha256());
        } catch (BinaryRefusedException e) {
            refuse(ctx, e.getMessage());
            return;
        } catch (IOException e) {
            LOG.log(Level.WARNING, "cannot create an upload file", e);
            refuse(ctx, "appliance cannot store the binary: " + e.getMessage());
            return;
        }
        phase = Phase.UPLOADING;
        uploadStartNanos = System.nanoTime();
        progressNanos = uploadStartNanos;
        transferStartNanos = uploadStartNanos;
        transferBytes = 0;
        if (timeoutCheck == null || timeoutCheck.isDone()) {
            scheduleTimeoutCheck(ctx, ctxShared.handshakeTimeout().toNanos());
        }
        ctx.writeAndFlush(Frames.helloReply(ctx.alloc(), HelloReply.sendBinary()));
    }

    /**
     * A part of the BINARY_CHUNK being received (its first part was checked: it fits what is still to come). A chunk
     * counts as progress for the timeouts once it is all in, as when chunks came whole: a client trickling one chunk
     * is closed at control.handshake_timeout_s.
     */
    private void continueChunk(ChannelHandlerContext ctx, Frame part) throws IOException {
        chunkOpen = !part.lastPart();
        if (part.lastPart()) {
            progressNanos = System.nanoTime();
            transferBytes += part.length();
        }
        if (phase == Phase.UPLOADING) onChunk(ctx, part);
        else onLibraryChunk(ctx, part);
    }

    private void onChunk(ChannelHandlerContext ctx, Frame frame) throws IOException {
        boolean complete;
        Path file;
        try {
            complete = upload.append(frame.payload());
            if (!complete) return;
            file = upload.finish();
        } catch (BinaryRefusedException e) {
            refuse(ctx, e.getMessage());
            return;
        } catch (IOException e) {
            // e.g. the state directory's file system is full: the upload file is deleted, the cache untouched
            LOG.warning("storing the upload of " + hello.sha256Hex() + " failed: " + e);
            refuse(ctx, "appliance cannot store the binary: " + describe(e));
            return;
        }
        phase = Phase.BUSY;
        long uploadMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - uploadStartNanos);
        String sha = hello.sha256Hex();
        String name = hello.name();
        String owner = tenant.name();
        BinaryUpload done = upload; // its file counts against the tenant's uploads until admitted
        upload = null;
        ctxShared.blocking().execute(() -> {
            long t0 = System.nanoTime();
            try (done) {
                CachedBinary b = ctxShared.cache().admit(sha, name, file, owner);
                long rewriteMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
                ctx.executor().execute(() -> openSession(ctx, b, new SetupTimings(false, uploadMs, rewriteMs)));
            } catch (BinaryRefusedException e) {
                ctx.executor().execute(() -> refuse(ctx, e.getMessage()));
            } catch (IOException e) {
                LOG.log(Level.WARNING, "admitting " + sha + " failed", e);
                ctx.executor().execute(() -> refuse(ctx, "appliance cannot store the binary: " + describe(e)));
            } catch (RuntimeException e) {
                LOG.log(Level.WARNING, "admitting " + sha + " failed", e);
                ctx.executor().execute(() -> refuse(ctx, "appliance could not rewrite the binary: " + e));
            }
        });
    }

    /** The shipped program is here: first the libraries it needs that only the client has, then the session. */
    private void openSession(ChannelHandlerContext ctx, CachedBinary binary, SetupTimings timings) {
        if (!ctx.channel().isActive()) return;
        pendingBinary = binary;
        pendingTimings = timings;
        libraries = new LibraryExchange(ctxShared.sessions().clientLibraries(), tenant.name(), ctxShared.cache(),
                ctxShared.binaryMaxBytes());
        LibraryExchange exchange = libraries;
        step(ctx, () -> exchange.start(binary.original()));
    }

    /**
     * Runs a step of the client-libraries exchange on the blocking executor (it reads files) and acts on its answer
     * back on the event loop; a step that fails unexpectedly refuses the client instead of leaving it waiting.
     */
    private void step(ChannelHandlerContext ctx, java.util.function.Supplier<LibraryExchange.Answer> work) {
        phase = Phase.BUSY;
        ctxShared.blocking().execute(() -> {
            LibraryExchange.Answer a;
            try {
                a = work.get();
            } catch (RuntimeException e) {
                LOG.log(Level.WARNING, "client libraries step failed", e);
                a = new LibraryExchange.Refused("appliance error while handling the program's libraries: " + e);
            }
            LibraryExchange.Answer answer = a;
            ctx.executor().execute(() -> answer(ctx, answer));
        });
    }

    /** Acts on what the client-libraries step says next (on the event loop). */
    private void answer(ChannelHandlerContext ctx, LibraryExchange.Answer a) {
        if (!ctx.channel().isActive()) {
            closeUpload();
            return;
        }
        if (a instanceof LibraryExchange.Need n) {
            // names from the client's ELF file: no control character reaches the log as such
            LOG.info("client " + ctx.channel().remoteAddress() + ": " + hello.name().replaceAll("\\p{Cntrl}", "?") + " needs "
                    + n.names().toString().replaceAll("\\p{Cntrl}", "?") + ", which this appliance lacks: asking the client");
            awaitClient(ctx, Phase.LIBRARY_LIST, HelloReply.needLibraries(n.names()));
        } else if (a instanceof LibraryExchange.Send s) {
            awaitClient(ctx, Phase.LIBRARY_UPLOAD, HelloReply.sendLibraries(s.names()));
        } else if (a instanceof LibraryExchange.Refused r) {
            refuse(ctx, r.why());
        } else if (a instanceof LibraryExchange.Done d) {
            libraries = null;
            long wanted = hello.gpusWanted() == 0 ? 1 : hello.gpusWanted(); // 0 means "the default", one GPU
            ctxShared.sessions().openNew(ctx.channel(), hello.name(), pendingBinary, (int) Math.min(wanted, Integer.MAX_VALUE),
                    pendingTimings, tenant, hello.visibleDevices(), takePlacement(), d.libraries());
        }
    }

    /** Sends a question and waits for the client's answer, which must come within control.handshake_timeout_s. */
    private void awaitClient(ChannelHandlerContext ctx, Phase next, HelloReply question) {
        phase = next;
        progressNanos = System.nanoTime();
        transferStartNanos = progressNanos;
        transferBytes = 0;
        if (timeoutCheck == null || timeoutCheck.isDone()) scheduleTimeoutCheck(ctx, ctxShared.handshakeTimeout().toNanos());
        ctx.writeAndFlush(Frames.helloReply(ctx.alloc(), question));
    }

    private void onLibraryList(ChannelHandlerContext ctx, io.vmcuda.appliance.wire.LibraryList list) {
        LibraryExchange exchange = libraries;
        step(ctx, () -> exchange.onList(list));
    }

    private void onLibraryChunk(ChannelHandlerContext ctx, Frame frame) {
        boolean all;
        try {
            all = libraries.onChunk(frame.payload());
        } catch (BinaryRefusedException | IOException e) {
            refuseLibrary(ctx, e);
            return;
        }
        if (!all) return;
        LibraryExchange exchange = libraries;
        step(ctx, exchange::admitUploads);
    }

    /** A client library's bytes were refused (the client's fault: its reason) or could not be stored (logged). */
    private void refuseLibrary(ChannelHandlerContext ctx, Exception e) {
        if (e instanceof IOException io) {
            LOG.warning("storing a client library failed: " + io);
            refuse(ctx, "appliance cannot store a client library: " + describe(io));
        } else {
            refuse(ctx, e.getMessage());
        }
    }

    /** The placement, handed over: from here its holder (the session manager) decides it. */
    private PlacementHint takePlacement() {
        PlacementHint p = placement;
        placement = PlacementHint.NONE;
        return p;
    }

    /** The ticket of a refused (or vanished) client is spent: its slot goes back to the pool now, not at its TTL. */
    private void placementDecided() {
        takePlacement().decided().run();
    }

    private void refuse(ChannelHandlerContext ctx, String why) {
        placementDecided();
        phase = Phase.BUSY;
        chunkOpen = false; // the rest of a chunk being received is dropped: the connection is closing
        closeUpload();
        ctxShared.refusals().refuse(ctx.channel(), why);
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
        Throwable c = cause instanceof DecoderException && cause.getCause() != null ? cause.getCause() : cause;
        closeUpload();
        phase = Phase.BUSY;
        if (c instanceof ProtocolException) {
            ProtocolException pe = (ProtocolException) c;
            if (pe.code() == ProtocolException.TOO_MANY) { // the port's budget for frames received in part is spent
                ctxShared.limitedLog().log(Level.WARNING, "frames refused because too many arrive in part at once",
                        "closing " + ctx.channel().remoteAddress() + ": " + pe.getMessage());
                ctxShared.refusals().metrics().handshakeRefused();
            } else {
                ctxShared.limitedLog().log(Level.INFO, "protocol errors on control connections",
                        "protocol error from " + ctx.channel().remoteAddress() + ": " + pe.getMessage());
                ctxShared.refusals().metrics().protocolError();
            }
            ctx.channel().config().setAutoRead(false); // nothing more from this peer is worth reading
            ctx.writeAndFlush(Frames.error(ctx.alloc(), pe.code(), pe.getMessage()))
                    .addListener(ChannelFutureListener.CLOSE);
            return;
        }
        if (c instanceof IOException) {
            LOG.fine("connection " + ctx.channel().remoteAddress() + ": " + c.getMessage());
        } else {
            // One line, limited like every other line a peer can cause once per connection: when the daemon ran out
            // of direct memory, 250 connections wrote 96 stack traces of the same OutOfMemoryError. The trace only at FINE.
            ctxShared.limitedLog().log(Level.WARNING, "control connections failed",
                    "connection " + ctx.channel().remoteAddress() + " failed: " + c);
            LOG.log(Level.FINE, "connection " + ctx.channel().remoteAddress() + " failed", c);
        }
        ctx.close();
    }

    /** An I/O failure in words an operator acts on ("No space left on device" rather than a class name). */
    static String describe(IOException e) {
        String m = e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage();
        if (e instanceof java.nio.file.FileSystemException fse && fse.getReason() != null) m = fse.getReason();
        if (m.contains("No space left")) return "its disk is full (" + m + ")";
        return m;
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) throws Exception {
        releasePending();
        placementDecided();
        if (timeoutCheck != null) timeoutCheck.cancel(false);
        closeUpload();
        super.channelInactive(ctx);
    }

    private void closeUpload() {
        if (upload != null) {
            upload.close();
            upload = null;
        }
        if (libraries != null) {
            // on the blocking executor: close() waits for a step still running there (it may be hashing gigabytes)
            LibraryExchange done = libraries;
            libraries = null;
            ctxShared.blocking().execute(done::close);
        }
    }
}
