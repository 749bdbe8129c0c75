package dev.kvpool.console;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import org.msgpack.core.MessageBufferPacker;
import org.msgpack.core.MessagePack;
import org.zeromq.SocketType;
import org.zeromq.ZContext;
import org.zeromq.ZMQ;

/**
 * A vLLM pod's KV-event publisher as vLLM builds it (kvcm-engine-events.md §11): a PUB socket sending
 * {@code [topic, seq (8 bytes big-endian), msgpack batch]}. No replay socket, so a skipped sequence number is a gap
 * the subscriber cannot fill.
 */
final class EnginePublisher implements AutoCloseable {
    private final ZContext ctx = new ZContext();
    private final ZMQ.Socket pub;
    private final int port;

    EnginePublisher() {
        pub = ctx.createSocket(SocketType.PUB);
        pub.setLinger(0);
        port = pub.bindToRandomPort("tcp://127.0.0.1");
    }

    String endpoint() {
        return "tcp://127.0.0.1:" + port;
    }

    synchronized void publish(long seq, byte[] batch) {
        pub.sendMore("kv-events".getBytes(StandardCharsets.UTF_8));
        pub.sendMore(ByteBuffer.allocate(8).putLong(seq).array());
        pub.send(batch);
    }

    /**
     * A batch {@code [ts, [["BlockStored", hashes, parent, token_ids, block_size, lora_id, medium]], dp_rank]} in
     * vLLM's array layout: the blocks {@code keys} of {@code tokens}, chained from no parent.
     */
    static byte[] stored(long[] keys, long[] tokens, int blockSize, String medium) {
        try (MessageBufferPacker p = MessagePack.newDefaultBufferPacker()) {
            p.packArrayHeader(3).packDouble(System.currentTimeMillis() / 1000.0);
            p.packArrayHeader(1).packArrayHeader(7).packString("BlockStored");
            p.packArrayHeader(keys.length);
            for (long k : keys) {
                p.packLong(k);
            }
            p.packNil();
            int n = Math.min(tokens.length, keys.length * blockSize);
            p.packArrayHeader(n);
            for (int i = 0; i < n; i++) {
                p.packLong(tokens[i]);
            }
            p.packInt(blockSize).packNil().packString(medium);
            p.packNil();
            return p.toByteArray();
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }

    @Override
    public void close() {
        ctx.close();
    }
}
