package io.vmcuda.appliance.session;

import io.vmcuda.appliance.JsonWriter;
import io.vmcuda.scheduler.GpuInfo;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.logging.Logger;

/**
 * {@code <state>/sessions.jsonl}: one JSON object per ended session, appended when its worker is reaped. Bounded:
 * a record that would take the file past {@code maxBytes} first moves it to {@code sessions.jsonl.1} (replacing
 * the one before), so the records of about the last two files' worth of sessions are kept and the state disk
 * does not fill with them.
 */
public final class SessionRecordLog {
    private static final Logger LOG = Logger.getLogger(SessionRecordLog.class.getName());

    private final Path file;
    private final long maxBytes;

    public SessionRecordLog(Path file) {
        this(file, Long.MAX_VALUE);
    }

    /** @param maxBytes the file's size beyond which it is rotated (session.records_max_bytes) */
    public SessionRecordLog(Path file, long maxBytes) {
        this.file = file;
        this.maxBytes = maxBytes;
    }

    public Path file() {
        return file;
    }

    synchronized void append(Session s) {
        String line = toJson(s) + "\n";
        try {
            byte[] bytes = line.getBytes(StandardCharsets.UTF_8);
            if (Files.exists(file) && Files.size(file) + bytes.length > maxBytes) {
                Files.move(file, file.resolveSibling(file.getFileName() + ".1"), StandardCopyOption.REPLACE_EXISTING);
            }
            Files.writeString(file, line, StandardCharsets.UTF_8,
                    StandardOpenOption.CREATE, StandardOpenOption.APPEND, StandardOpenOption.WRITE);
        } catch (IOException e) {
            LOG.warning("could not append session " + s.id() + " to " + file + ": " + e.getMessage());
        }
    }

    static String toJson(Session s) {
        JsonWriter w = new JsonWriter().beginObject()
                .field("id", s.id())
                .field("program", s.program())
                .field("tenant", s.tenant().name())
                .field("uid", s.uid())
                .field("sha256", s.sha256())
                .name("gpus").beginArray();
        for (GpuInfo g : s.binding().gpus()) w.value(g.uuid());
        w.endArray()
                .field("started", s.started().toString())
                .field("ended", s.ended() == null ? null : s.ended().toString())
                .field("state", s.state().name().toLowerCase())
                .name("exit_status");
        if (s.exitStatus() == null) w.nullValue();
        else w.value(s.exitStatus());
        w.name("program_exit_status");
        if (s.programExitStatus() == null) w.nullValue();
        else w.value(s.programExitStatus());
        w.field("bytes_h2d", s.bytesH2d()).field("bytes_d2h", s.bytesD2h()).field("calls", s.calls());
        SessionJson.setup(w, s.timings());
        if (s.abortReason() != null) w.field("reason", s.abortReason());
        return w.field("log", s.logFile().toString()).endObject().toString();
    }
}
