package io.vmcuda.appliance.session;

import io.vmcuda.appliance.JsonWriter;
import io.vmcuda.scheduler.GpuInfo;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.logging.Logger;

/** {@code <state>/sessions.jsonl}: one JSON object per ended session, appended when its worker is reaped. */
public final class SessionRecordLog {
    private static final Logger LOG = Logger.getLogger(SessionRecordLog.class.getName());

    private final Path file;

    public SessionRecordLog(Path file) {
        this.file = file;
    }

    public Path file() {
        return file;
    }

    synchronized void append(Session s) {
        String line = toJson(s) + "\n";
        try {
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
        w.field("bytes_h2d", s.bytesH2d()).field("bytes_d2h", s.bytesD2h()).field("calls", s.calls());
        SessionJson.setup(w, s.timings());
        if (s.abortReason() != null) w.field("reason", s.abortReason());
        return w.field("log", s.logFile().toString()).endObject().toString();
    }
}
