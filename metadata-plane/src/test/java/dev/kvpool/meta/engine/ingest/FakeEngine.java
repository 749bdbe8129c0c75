package dev.kvpool.meta.engine.ingest;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.concurrent.ConcurrentSkipListMap;
import org.zeromq.SocketType;
import org.zeromq.ZContext;
import org.zeromq.ZMQ;

/**
 * A vLLM publisher as vLLM builds it (§11): a PUB socket sending {@code [topic, seq, payload]} and a ROUTER answering
 * {@code [id, "", start_seq]} with the buffered batches from start_seq, in the older 2-frame or the newer 3-frame
 * layout, then END_SEQ. Batches can be buffered without going out live (a drop at the HWM) and the buffer can be
 * pruned (only the last buffer_steps kept).
 */
final class FakeEngine implements AutoCloseable {
    final ZContext ctx = new ZContext();
    final ZMQ.Socket pub;
    final int pubPort;
    final int replayPort;
    final String topic;
    volatile boolean newerLayout = true;
    final Map<Long, byte[]> buffer = new ConcurrentSkipListMap<>();
    private final Thread router;
    private volatile boolean closed;
    volatile int replayRequests;

    FakeEngine(String topic) {
        this.topic = topic;
        pub = ctx.createSocket(SocketType.PUB);
        pub.setLinger(0);
        // below Linux's ephemeral range (32768-60999): JeroMQ's default range (49152-65535) overlaps it, so a port
        // could also be the source port of one of this JVM's many client connections
        pubPort = pub.bindToRandomPort("tcp://127.0.0.1", 20000, 32000);
        ZMQ.Socket r = ctx.createSocket(SocketType.ROUTER);
        r.setLinger(0);
        r.setReceiveTimeOut(100);
        replayPort = r.bindToRandomPort("tcp://127.0.0.1", 20000, 32000);
        router = Thread.ofPlatform().daemon().name("fake-engine-router").start(() -> serve(r));
    }

    String endpoint() {
        return "tcp://127.0.0.1:" + pubPort;
    }

    String replayEndpoint() {
        return "tcp://127.0.0.1:" + replayPort;
    }

    static byte[] seq(long s) {
        return ByteBuffer.allocate(8).putLong(s).array();
    }

    /** Buffers and publishes batch {@code s}. */
    synchronized void publish(long s, byte[] payload) {
        buffer.put(s, payload);
        send(s, payload);
    }

    synchronized void send(long s, byte[] payload) {
        pub.sendMore(topic.getBytes(StandardCharsets.UTF_8));
        pub.sendMore(seq(s));
        pub.send(payload);
    }

    /** Buffers batch {@code s} without sending it live (lost at the high-water mark). */
    void lose(long s, byte[] payload) {
        buffer.put(s, payload);
    }

    /** Keeps only batches from {@code s} on. */
    void prune(long s) {
        buffer.keySet().removeIf(k -> k < s);
    }

    private void serve(ZMQ.Socket r) {
        try {
            while (!closed) {
                byte[] id = r.recv(0);
                if (id == null) {
                    continue;
                }
                java.util.List<byte[]> rest = new java.util.ArrayList<>();
                while (r.hasReceiveMore()) {
                    rest.add(r.recv(0));
                }
                if (rest.size() != 2) {
                    continue;
                }
                replayRequests++;
                long start = ByteBuffer.wrap(rest.get(1)).getLong();
                for (Map.Entry<Long, byte[]> e : buffer.entrySet()) {
                    if (e.getKey() >= start) {
                        reply(r, id, seq(e.getKey()), e.getValue());
                    }
                }
                reply(r, id, seq(-1), new byte[0]);
            }
        } catch (RuntimeException e) {
            if (!closed) {
                throw e;
            }
        } finally {
            ctx.destroySocket(r);
        }
    }

    private void reply(ZMQ.Socket r, byte[] id, byte[] s, byte[] payload) {
        r.sendMore(id);
        r.sendMore(new byte[0]);
        if (newerLayout) {
            r.sendMore(topic.getBytes(StandardCharsets.UTF_8));
        }
        r.sendMore(s);
        r.send(payload);
    }

    @Override
    public void close() {
        closed = true;
        try {
            router.join(2000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        ctx.close();
    }
}
