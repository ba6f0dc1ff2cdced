package io.vmcuda.appliance.wire;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.handler.codec.DecoderException;
import io.vmcuda.protocol.Wire;
import org.junit.jupiter.api.Test;

class FrameDecoderTest {
    private static ByteBuf header(int magic, int type, int flags, long id, long len) {
        ByteBuf b = Unpooled.buffer();
        b.writeIntLE(magic).writeShortLE(type).writeShortLE(flags).writeIntLE((int) id).writeIntLE((int) len);
        return b;
    }

    @Test
    void decodesAFrameSplitAcrossReads() {
        EmbeddedChannel ch = new EmbeddedChannel(new FrameDecoder());
        ByteBuf h = header(Wire.MAGIC, Wire.TYPE_HELLO, 3, 42, 5);
        ch.writeInbound(h.readRetainedSlice(10));
        ch.writeInbound(h.readRetainedSlice(6));
        h.release();
        assertNull(ch.readInbound(), "no frame before its payload");
        ch.writeInbound(Unpooled.wrappedBuffer(new byte[] {1, 2, 3, 4, 5}));
        Frame f = ch.readInbound();
        assertEquals(Wire.TYPE_HELLO, f.type());
        assertEquals(3, f.flags());
        assertEquals(42, f.id());
        assertEquals(5, f.payload().readableBytes());
        f.release();
        ch.finishAndReleaseAll();
    }

    private static ProtocolException rejected(ByteBuf input) {
        EmbeddedChannel ch = new EmbeddedChannel(new FrameDecoder());
        DecoderException e = assertThrows(DecoderException.class, () -> ch.writeInbound(input));
        ch.finishAndReleaseAll();
        return assertInstanceOf(ProtocolException.class, e.getCause());
    }

    @Test
    void badMagic() {
        assertEquals(ProtocolException.BAD_MAGIC, rejected(header(0x0BADF00D, Wire.TYPE_HELLO, 0, 0, 0)).code());
    }

    @Test
    void unknownType() {
        assertEquals(ProtocolException.UNKNOWN_TYPE, rejected(header(Wire.MAGIC, 0, 0, 0, 0)).code());
        assertEquals(ProtocolException.UNKNOWN_TYPE, rejected(header(Wire.MAGIC, Wire.TYPE_LIBRARIES + 1, 0, 0, 0)).code());
        assertEquals(ProtocolException.UNKNOWN_TYPE, rejected(header(Wire.MAGIC, 0xFFFF, 0, 0, 0)).code());
    }

    @Test
    void perTypeLimitsApplyBeforeThePayloadIsBuffered() {
        assertEquals(ProtocolException.TOO_LONG,
                rejected(header(Wire.MAGIC, Wire.TYPE_HELLO, 0, 0, Wire.MAX_CONTROL_PAYLOAD + 1)).code());
        assertEquals(ProtocolException.TOO_LONG,
                rejected(header(Wire.MAGIC, Wire.TYPE_BINARY_CHUNK, 0, 0, Wire.MAX_BINARY_CHUNK + 1L)).code());
        assertEquals(ProtocolException.TOO_LONG,
                rejected(header(Wire.MAGIC, Wire.TYPE_LIBRARIES, 0, 0, 0xFFFFFFFFL)).code());
    }

    @Test
    void typesNoClientSendsToTheControlPortAreRefusedAtTheirHeader() {
        // a CALL may be 1 MiB: refused before any of it is buffered, not once it is all in
        for (int t : new int[] {Wire.TYPE_CALL, Wire.TYPE_REPLY, Wire.TYPE_OUTPUT, Wire.TYPE_MANIFEST, Wire.TYPE_ERROR,
                Wire.TYPE_HELLO_REPLY, Wire.TYPE_CHALLENGE}) {
            ProtocolException e = rejected(header(Wire.MAGIC, t, 0, 0, 1000));
            assertEquals(ProtocolException.UNEXPECTED, e.code(), e.getMessage());
        }
    }

    @Test
    void theConnectionsPhaseRefusesAFrameAtItsHeader() {
        EmbeddedChannel ch = new EmbeddedChannel(new FrameDecoder(UnfinishedFrames.unlimited(), t -> {
            if (t != Wire.TYPE_HELLO) throw new ProtocolException(ProtocolException.UNEXPECTED, "expected HELLO");
        }));
        DecoderException e = assertThrows(DecoderException.class,
                () -> ch.writeInbound(header(Wire.MAGIC, Wire.TYPE_BINARY_CHUNK, 0, 0, Wire.MAX_BINARY_CHUNK)));
        assertEquals(ProtocolException.UNEXPECTED, assertInstanceOf(ProtocolException.class, e.getCause()).code());
        assertNull(ch.readInbound(), "nothing passed on");
        ch.writeInbound(Unpooled.wrappedBuffer(new byte[1000])); // the rest of the stream is ignored until close
        assertNull(ch.readInbound());
        ch.finishAndReleaseAll();
    }

    /**
     * The attack this guards against: many connections each announce a 4 MiB chunk and send most of it slowly. The
     * decoder passes each part on as it arrives and keeps none of it (it gathered each chunk in an 8 MiB buffer).
     */
    @Test
    void aChunkIsPassedOnInPartsAsItArrivesAndNothingIsKept() {
        EmbeddedChannel ch = new EmbeddedChannel(new FrameDecoder());
        ch.writeInbound(header(Wire.MAGIC, Wire.TYPE_BINARY_CHUNK, 0, 0, 10_000));
        assertNull(ch.readInbound(), "a header alone is no part");
        byte[] data = new byte[10_000];
        for (int i = 0; i < data.length; i++) data[i] = (byte) i;
        int offset = 0;
        for (int n : new int[] {1, 4095, 5000, 904}) {
            ByteBuf in = Unpooled.copiedBuffer(data, offset, n);
            ch.writeInbound(in);
            Frame f = ch.readInbound();
            assertEquals(Wire.TYPE_BINARY_CHUNK, f.type());
            assertEquals(10_000, f.length());
            assertEquals(offset, f.offset());
            assertEquals(n, f.payload().readableBytes());
            assertEquals((byte) offset, f.payload().getByte(0));
            assertEquals(offset == 0, f.firstPart());
            assertEquals(offset + n == 10_000, f.lastPart());
            offset += n;
            f.release();
            assertEquals(0, in.refCnt(), "the decoder keeps no byte of the chunk once the handler is done with it");
        }
        // the next frame starts cleanly after the chunk, here in the same read as the chunk's last byte
        ByteBuf two = Unpooled.buffer();
        two.writeBytes(header(Wire.MAGIC, Wire.TYPE_BINARY_CHUNK, 0, 0, 1)).writeByte(7);
        two.writeBytes(header(Wire.MAGIC, Wire.TYPE_HELLO, 0, 0, 2)).writeByte(8).writeByte(9);
        ch.writeInbound(two);
        Frame chunk = ch.readInbound();
        assertEquals(1, chunk.length());
        assertEquals(7, chunk.payload().getByte(0));
        chunk.release();
        Frame hello = ch.readInbound();
        assertEquals(Wire.TYPE_HELLO, hello.type());
        assertEquals(2, hello.payload().readableBytes());
        hello.release();
        ch.finishAndReleaseAll();
    }

    @Test
    void anEmptyChunkIsPassedOnOnceForTheHandlerToRefuse() {
        EmbeddedChannel ch = new EmbeddedChannel(new FrameDecoder());
        ch.writeInbound(header(Wire.MAGIC, Wire.TYPE_BINARY_CHUNK, 0, 0, 0));
        Frame f = ch.readInbound();
        assertEquals(0, f.length());
        assertTrue(f.firstPart() && f.lastPart());
        f.release();
        assertNull(ch.readInbound());
        ch.finishAndReleaseAll();
    }

    @Test
    void framesReceivedInPartShareOneBudgetAndOneOverItIsRefused() {
        UnfinishedFrames budget = new UnfinishedFrames(3 * Wire.MAX_CONTROL_PAYLOAD);
        EmbeddedChannel[] held = new EmbeddedChannel[3];
        for (int i = 0; i < held.length; i++) {
            held[i] = new EmbeddedChannel(new FrameDecoder(budget, t -> { }));
            held[i].writeInbound(header(Wire.MAGIC, Wire.TYPE_HELLO, 0, 0, Wire.MAX_CONTROL_PAYLOAD));
            held[i].writeInbound(Unpooled.wrappedBuffer(new byte[100]));
        }
        assertEquals(3L * Wire.MAX_CONTROL_PAYLOAD, budget.heldBytes());

        // a frame that arrives whole needs no budget: another client's HELLO goes through
        EmbeddedChannel whole = new EmbeddedChannel(new FrameDecoder(budget, t -> { }));
        whole.writeInbound(header(Wire.MAGIC, Wire.TYPE_HELLO, 0, 0, 20_000).writeBytes(new byte[20_000]));
        Frame f = whole.readInbound();
        assertEquals(20_000, f.payload().readableBytes());
        f.release();
        // nor does a small one (any real HELLO) that arrives in two reads, its header apart
        EmbeddedChannel split = new EmbeddedChannel(new FrameDecoder(budget, t -> { }));
        split.writeInbound(header(Wire.MAGIC, Wire.TYPE_HELLO, 0, 0, FrameDecoder.UNCOUNTED_FRAME_BYTES));
        split.writeInbound(Unpooled.wrappedBuffer(new byte[FrameDecoder.UNCOUNTED_FRAME_BYTES]));
        f = split.readInbound();
        assertEquals(FrameDecoder.UNCOUNTED_FRAME_BYTES, f.payload().readableBytes());
        f.release();

        // one more larger frame received in part is refused with ERROR 7 and a message naming the setting
        EmbeddedChannel over = new EmbeddedChannel(new FrameDecoder(budget, t -> { }));
        ByteBuf part = header(Wire.MAGIC, Wire.TYPE_HELLO, 0, 0, FrameDecoder.UNCOUNTED_FRAME_BYTES + 1)
                .writeBytes(new byte[100]);
        DecoderException e = assertThrows(DecoderException.class, () -> over.writeInbound(part));
        ProtocolException pe = assertInstanceOf(ProtocolException.class, e.getCause());
        assertEquals(ProtocolException.TOO_MANY, pe.code());
        assertTrue(pe.getMessage().contains("control.max_unfinished_frame_bytes"), pe.getMessage());
        assertEquals(3L * Wire.MAX_CONTROL_PAYLOAD, budget.heldBytes(), "the refused frame holds nothing");

        // a frame completed gives its bytes back; a connection closed with a frame in part, too
        held[0].writeInbound(Unpooled.wrappedBuffer(new byte[Wire.MAX_CONTROL_PAYLOAD - 100]));
        Frame done = held[0].readInbound();
        assertEquals(Wire.MAX_CONTROL_PAYLOAD, done.payload().readableBytes());
        done.release();
        assertEquals(2L * Wire.MAX_CONTROL_PAYLOAD, budget.heldBytes());
        held[1].close();
        assertEquals(1L * Wire.MAX_CONTROL_PAYLOAD, budget.heldBytes());
        for (EmbeddedChannel c : held) c.finishAndReleaseAll();
        whole.finishAndReleaseAll();
        split.finishAndReleaseAll();
        over.finishAndReleaseAll();
        assertEquals(0, budget.heldBytes());
    }

    @Test
    void aChunkAtTheLimitIsAccepted() {
        EmbeddedChannel ch = new EmbeddedChannel(new FrameDecoder());
        ch.writeInbound(header(Wire.MAGIC, Wire.TYPE_BINARY_CHUNK, 0, 0, Wire.MAX_BINARY_CHUNK));
        ch.writeInbound(Unpooled.wrappedBuffer(new byte[Wire.MAX_BINARY_CHUNK]));
        Frame f = ch.readInbound();
        assertEquals(Wire.MAX_BINARY_CHUNK, f.payload().readableBytes());
        f.release();
        ch.finishAndReleaseAll();
    }
}
