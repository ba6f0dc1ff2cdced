package io.vmcuda.appliance.control;

import io.netty.buffer.ByteBuf;
import io.vmcuda.appliance.cache.BinaryCache;
import io.vmcuda.appliance.cache.BinaryRefusedException;
import io.vmcuda.appliance.cache.BinaryUpload;
import io.vmcuda.appliance.cache.ClientLibraries;
import io.vmcuda.appliance.wire.LibraryList;
import io.vmcuda.protocol.Wire;
import io.vmcuda.rewriter.ElfDependencies;
import io.vmcuda.rewriter.ElfRewriteException;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The client-libraries step of one NEW session's handshake (PROTOCOL.md "Client libraries"): NEED_LIBRARIES names
 * what the shipped program needs and the appliance lacks; the client's LIBRARIES frame says what each is (size,
 * SHA-256); SEND_LIBRARIES asks for the bytes of those not cached for this tenant; the libraries' own needs start
 * the next round. The methods marked blocking read files and run on the blocking executor; the caller sends
 * what they answer.
 */
final class LibraryExchange {
    /** Rounds of dependencies (a library shipped because a shipped library needs it...). */
    static final int MAX_ROUNDS = 8;

    interface Answer {
    }

    record Need(List<String> names) implements Answer {
    }

    record Send(List<String> names) implements Answer {
    }

    record Refused(String why) implements Answer {
    }

    /** @param libraries file name the loader asks for → the library's file on the appliance */
    record Done(Map<String, Path> libraries) implements Answer {
    }

    private final ClientLibraries store;
    private final String tenant;
    private final BinaryCache uploads;
    private final long maxBytes;
    private final Map<String, Path> obtained = new LinkedHashMap<>();
    private final List<String> obtainedThisRound = new ArrayList<>();
    private final Deque<LibraryList.Entry> toUpload = new ArrayDeque<>();
    private final List<LibraryList.Entry> uploaded = new ArrayList<>();
    private final List<Path> uploadedFiles = new ArrayList<>();
    private final List<BinaryUpload> finishedUploads = new ArrayList<>(); // their files count until admitted or deleted
    private List<String> asked = List.of();
    private BinaryUpload current;
    private int rounds;

    /** @param uploads where the libraries' uploads are made, within the tenant's share (BinaryCache#startUpload) */
    LibraryExchange(ClientLibraries store, String tenant, BinaryCache uploads, long maxBytes) {
        this.store = store;
        this.tenant = tenant;
        this.uploads = uploads;
        this.maxBytes = maxBytes;
    }

    /** Blocking. What the program {@code executable} needs that the appliance lacks: Done when nothing. */
    synchronized Answer start(Path executable) {
        try {
            return ask(store.missing(ElfDependencies.read(executable), Set.of()));
        } catch (ElfRewriteException | IOException e) {
            return new Done(Map.of()); // the rewriter admitted it: a program whose needs cannot be read is started as before
        }
    }

    private Answer ask(List<String> missing) {
        if (missing.isEmpty()) return new Done(Map.copyOf(obtained));
        if (++rounds > MAX_ROUNDS || obtained.size() + missing.size() > Wire.MAX_CLIENT_LIBRARIES) {
            return new Refused("the program needs more than " + Wire.MAX_CLIENT_LIBRARIES + " libraries (or " + MAX_ROUNDS
                    + " levels of them) that this appliance lacks: " + String.join(", ", missing));
        }
        String cannot = store.cannotStore();
        if (cannot != null) return new Refused("the program needs " + String.join(", ", missing) + ", which the appliance lacks, and " + cannot);
        asked = missing;
        return new Need(missing);
    }

    /** Blocking. The client's LIBRARIES answer: cached ones are taken, the rest asked for. */
    synchronized Answer onList(LibraryList list) {
        List<String> names = list.entries().stream().map(LibraryList.Entry::name).toList();
        if (!names.equals(asked)) {
            return new Refused("the client's LIBRARIES frame lists " + names + ", not the libraries asked for " + asked);
        }
        obtainedThisRound.clear();
        for (LibraryList.Entry e : list.entries()) {
            if (e.absent()) {
                return new Refused("the program needs " + e.name() + ", which neither this appliance nor the client has");
            }
            if (e.size() > maxBytes) {
                return new Refused(e.name() + " is " + e.size() + " bytes, more than binary.max_bytes (" + maxBytes + ")");
            }
            var hit = store.lookup(e.sha256Hex(), e.size(), tenant);
            if (hit.isPresent()) {
                took(e.name(), hit.get());
            } else {
                toUpload.add(e);
            }
        }
        if (toUpload.isEmpty()) return nextRound();
        return new Send(toUpload.stream().map(LibraryList.Entry::name).toList());
    }

    /**
     * The header of a BINARY_CHUNK of the libraries' bytes (each library in chunks of its own, in the order asked):
     * checked before any of its bytes is stored, since they come in parts ({@link #onChunk}).
     */
    synchronized void startChunk(long chunkBytes) throws IOException, BinaryRefusedException {
        LibraryList.Entry e = toUpload.peekFirst();
        if (e == null) throw new BinaryRefusedException("a BINARY_CHUNK after the last library asked for");
        if (current == null) current = uploads.startUpload(tenant, e.size(), e.sha256());
        try {
            current.checkRoomFor(chunkBytes);
        } catch (BinaryRefusedException tooMuch) {
            throw new BinaryRefusedException("the client sent more than the " + e.size() + " bytes it announced for "
                    + e.name() + " (each library travels in chunks of its own)");
        }
    }

    /**
     * Bytes of the chunk {@link #startChunk} accepted, all or a part of them: a library is complete only at the end
     * of a chunk, since its chunks fit it.
     * @return true when every asked library is in
     */
    synchronized boolean onChunk(ByteBuf part) throws IOException, BinaryRefusedException {
        LibraryList.Entry e = toUpload.peekFirst();
        boolean complete = current.append(part);
        if (!complete) return false;
        try {
            uploadedFiles.add(current.finish());
            finishedUploads.add(current);
        } catch (BinaryRefusedException bad) {
            current.close(); // the upload file goes with it
            throw new BinaryRefusedException(e.name() + ": " + bad.getMessage());
        } catch (IOException failed) {
            current.close();
            throw failed;
        } finally {
            current = null;
        }
        uploaded.add(toUpload.removeFirst());
        return toUpload.isEmpty();
    }

    /** Blocking. The uploads into the tenant's store, then their own needs. */
    synchronized Answer admitUploads() {
        try {
            for (int i = 0; i < uploaded.size(); i++) {
                LibraryList.Entry e = uploaded.get(i);
                String why = store.admit(e.sha256Hex(), e.size(), tenant, uploadedFiles.get(i));
                if (why != null) return new Refused("the appliance cannot keep " + e.name() + ": " + why);
                var kept = store.lookup(e.sha256Hex(), e.size(), tenant);
                if (kept.isEmpty()) return new Refused("the appliance cannot keep " + e.name() + ": evicted at once (cache.module_bytes)");
                took(e.name(), kept.get());
            }
            return nextRound();
        } finally {
            close();
        }
    }

    private void took(String name, Path file) {
        obtained.put(name, file);
        obtainedThisRound.add(name);
    }

    /** What the libraries obtained in this round need in turn. */
    private Answer nextRound() {
        Set<String> missing = new LinkedHashSet<>();
        for (String name : obtainedThisRound) {
            try {
                missing.addAll(store.missing(ElfDependencies.read(obtained.get(name)), obtained.keySet()));
            } catch (ElfRewriteException | IOException e) {
                return new Refused("the client's " + name + " is not a shared library the appliance can read: " + e.getMessage());
            }
        }
        obtainedThisRound.clear();
        return ask(List.copyOf(missing));
    }

    /** Deletes upload files not yet admitted (a client that vanished, a refusal). */
    synchronized void close() {
        if (current != null) current.close();
        current = null;
        for (Path f : uploadedFiles) {
            try {
                Files.deleteIfExists(f);
            } catch (IOException ignored) {
                // removed with the upload directory's leftovers at the next start
            }
        }
        uploadedFiles.clear();
        finishedUploads.forEach(BinaryUpload::close); // after their files went: the tenant's share back
        finishedUploads.clear();
        uploaded.clear();
    }
}
