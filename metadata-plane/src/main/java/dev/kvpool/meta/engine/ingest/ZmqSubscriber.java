package dev.kvpool.meta.engine.ingest;

import dev.kvpool.engine.event.EventBatch;
import dev.kvpool.engine.event.KvEventDecoder;
import dev.kvpool.engine.event.SequenceCursor;
import io.micrometer.core.instrument.Counter;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.jboss.logging.Logger;
import org.zeromq.SocketType;
import org.zeromq.ZContext;
import org.zeromq.ZMQ;

/**
 * One SUB socket reading an engine's KV-event stream (kvcm-engine-events.md §11): live frames
 * {@code [topic, seq (8 B BE), payload]}, a {@link SequenceCursor} per (pod, DP rank), and on a gap a replay request
 * {@code ["", start_seq]} on a DEALER to the engine's ROUTER, whose replies come in either layout
 * ({@code ["", seq, payload]} or {@code ["", topic, seq, payload]}, ended by seq {@code FF..FF}). Replayed batches go
 * to the sink in order before the live one. What the replay could not fill (pruned history, no replay endpoint, a
 * timeout) reaches the {@link EventApplier} as a gap, which marks the pod uncertain. The first batch of a pod past
 * sequence 0 asks for a replay from 0 (a full replay rebuilds the pod's view).
 *
 * <p>Connect mode: one engine endpoint (a {@link EngineSource}). Bind mode: one bound SUB that pods connect to with
 * llm-d topics {@code kv@<pod>@<model>} (no replay: the pods' ROUTER addresses are unknown). ZMQ reconnects by itself;
 * {@link #close()} stops the thread, which closes its sockets.
 */
final class ZmqSubscriber implements AutoCloseable {
    private static final Logger LOG = Logger.getLogger(ZmqSubscriber.class);
    static final long END_SEQ = -1L;
    private static final int MAX_FRAMES = 8;

    /** Where batches go: the applier (no Kafka) or the Kafka producer. */
    interface Sink {
        void accept(String instance, String basePod, String source, long seq, byte[] payload);
    }

    /**
     * JeroMQ 0.6.0 leaves about 1 in 10–30 fresh connections (measured here: 3/60 and 12/100, more under load)
     * TCP-connected with the peer's greeting unread, so no ZMTP handshake ever completes — the race of a cancelled
     * selection key described in zeromq/jeromq PR 1022 (open). Only the handshake timer recovers such a connection
     * (tear down, reconnect); its default is 30 s, during which a SUB gets nothing and a replay times out. A ZMTP
     * handshake is two round trips, so 1 s is ample inside a cluster; with it the stuck ones got through in ~1.1 s.
     */
    static final int HANDSHAKE_IVL_MS = 1000;

    record Settings(Duration replayTimeout, int maxReplayBatches, int rcvHwm) {
    }

    private final ZContext ctx;
    private final String name;
    private final String instance;
    private final EngineSource source; // null in bind mode
    private final String bindAddress; // null in connect mode
    private final String topic;
    private final Sink sink;
    private final PodStates states;
    private final EventApplier applier;
    private final Settings settings;
    private final Counter replays;
    private final Map<String, Track> cursors = new HashMap<>();
    private final Thread thread;
    private volatile boolean closed;
    private ZMQ.Socket dealer;

    /** A cursor and whether anything went through it yet (a fresh one accepts any first sequence number). */
    private static final class Track {
        SequenceCursor c = new SequenceCursor();
        boolean seen;

        boolean newer(long seq) {
            return !seen || Long.compareUnsigned(seq, c.last()) > 0;
        }

        void applied(long seq) {
            c.applied(seq);
            seen = true;
        }
    }

    /** Connect mode. */
    ZmqSubscriber(ZContext ctx, EngineSource source, Sink sink, PodStates states, EventApplier applier,
                  Settings settings, Counter replays) {
        this(ctx, source.name(), source.instanceId(), source, null, source.topic(), sink, states, applier, settings,
                replays);
    }

    /** Bind mode. */
    ZmqSubscriber(ZContext ctx, String name, String instance, String bindAddress, String topic, Sink sink,
                  PodStates states, EventApplier applier, Settings settings, Counter replays) {
        this(ctx, name, instance, null, bindAddress, topic, sink, states, applier, settings, replays);
    }

    private ZmqSubscriber(ZContext ctx, String name, String instance, EngineSource source, String bindAddress,
                          String topic, Sink sink, PodStates states, EventApplier applier, Settings settings,
                          Counter replays) {
        this.ctx = ctx;
        this.name = name;
        this.instance = instance;
        this.source = source;
        this.bindAddress = bindAddress;
        this.topic = topic;
        this.sink = sink;
        this.states = states;
        this.applier = applier;
        this.settings = settings;
        this.replays = replays;
        this.thread = Thread.ofPlatform().daemon().name("kvpool-engine-zmq-" + name).start(this::run);
    }

    private void run() {
        ZMQ.Socket sub = null;
        try {
            sub = ctx.createSocket(SocketType.SUB);
            sub.setRcvHWM(settings.rcvHwm());
            sub.setReceiveTimeOut(200); // wakes up to see close()
            sub.setLinger(0);
            sub.setHandshakeIvl(HANDSHAKE_IVL_MS);
            if (bindAddress != null) {
                sub.bind(bindAddress);
            } else {
                sub.connect(source.endpoint());
            }
            sub.subscribe(topic.getBytes(StandardCharsets.UTF_8));
            LOG.infof("engine events: source %s %s %s (instance %s)", name, bindAddress != null ? "bound at" : "connected to",
                    bindAddress != null ? bindAddress : source.endpoint(), instance);
            while (!closed) {
                List<byte[]> frames = recv(sub);
                if (frames != null) {
                    try {
                        live(frames);
                    } catch (RuntimeException e) { // never let one batch stop the source
                        applier.malformed("source " + name + ": " + e);
                    }
                }
            }
        } catch (RuntimeException e) {
            if (!closed) {
                LOG.errorf(e, "engine events: source %s stopped", name);
            }
        } finally {
            if (sub != null) {
                ctx.destroySocket(sub);
            }
            closeDealer();
        }
    }

    /** One multipart message (at most {@link #MAX_FRAMES} frames kept), or null on timeout. */
    private static List<byte[]> recv(ZMQ.Socket s) {
        byte[] f = s.recv(0);
        if (f == null) {
            return null;
        }
        List<byte[]> frames = new ArrayList<>(4);
        frames.add(f);
        while (s.hasReceiveMore()) {
            byte[] more = s.recv(0);
            if (frames.size() < MAX_FRAMES && more != null) {
                frames.add(more);
            }
        }
        return frames;
    }

    private void live(List<byte[]> frames) {
        if (frames.size() != 3 || frames.get(1).length < 8) {
            applier.malformed("source " + name + ": a live message of " + frames.size() + " frames (want [topic, seq, "
                    + "payload] with an 8-byte seq)");
            return;
        }
        String t = new String(frames.get(0), StandardCharsets.UTF_8);
        String basePod = source != null ? source.podOf(t) : EngineSource.podOfTopic(t);
        if (basePod == null) {
            applier.malformed("source " + name + ": topic is not kv@<pod>@<model>");
            return;
        }
        long seq = ByteBuffer.wrap(frames.get(1)).getLong();
        if (seq == END_SEQ) {
            applier.malformed("source " + name + ": a live message numbered END_SEQ");
            return;
        }
        byte[] payload = frames.get(2);
        Integer rank = rankOf(payload);
        String key = basePod + "#" + rank;
        Track cursor = cursors.get(key);
        if (cursor == null) {
            cursor = new Track();
            cursors.put(key, cursor);
            if (seq > 0 && source != null && source.replayEndpoint() != null) {
                replay(basePod, rank, cursor, 0); // rebuild from the engine's start if it still has it
            }
            if (cursor.newer(seq)) {
                forward(basePod, seq, payload);
                cursor.applied(seq);
            }
            return;
        }
        switch (cursor.c.offer(seq)) {
            case APPLY -> {
                forward(basePod, seq, payload);
                cursor.applied(seq);
            }
            case DUPLICATE -> {
            }
            case GAP -> {
                if (source != null && source.replayEndpoint() != null) {
                    replay(basePod, rank, cursor, cursor.c.next());
                }
                if (cursor.newer(seq)) { // what the replay did not fill, the applier sees as a gap
                    forward(basePod, seq, payload);
                    cursor.applied(seq);
                }
            }
            case RESET -> {
                cursor = new Track(); // a new engine epoch: the applier clears the pod
                cursors.put(key, cursor);
                forward(basePod, seq, payload);
                cursor.applied(seq);
            }
        }
    }

    private void forward(String basePod, long seq, byte[] payload) {
        sink.accept(instance, basePod, name, seq, payload);
    }

    private static Integer rankOf(byte[] payload) {
        try {
            EventBatch b = KvEventDecoder.decode(payload);
            return b.dataParallelRank() == null ? 0 : b.dataParallelRank();
        } catch (RuntimeException e) {
            return 0; // the applier counts it as malformed
        }
    }

    /**
     * Asks the engine's ROUTER for every batch from {@code start} and forwards those past the cursor, in order. Bounded:
     * each reply must come within the replay timeout and at most maxReplayBatches are read.
     */
    private void replay(String basePod, Integer rank, Track cursor, long start) {
        String pod = EventApplier.podId(basePod, rank);
        replays.increment();
        states.replaying(instance, pod, name, true);
        try {
            // a request that got no answer at all is asked once more on a new connection: a DEALER whose connection
            // went stale would otherwise make this read as pruned history
            if (!replayOnce(basePod, cursor, pod, start) && !closed) {
                replayOnce(basePod, cursor, pod, start); // nothing was applied: the same start
            }
        } finally {
            states.replaying(instance, pod, name, false);
        }
    }

    /** One replay request; false when not a single reply came within the timeout (the DEALER is closed then). */
    private boolean replayOnce(String basePod, Track cursor, String pod, long start) {
        if (dealer == null) {
            dealer = ctx.createSocket(SocketType.DEALER);
            dealer.setLinger(0);
            dealer.setHandshakeIvl(HANDSHAKE_IVL_MS);
            dealer.setReceiveTimeOut((int) settings.replayTimeout().toMillis());
            dealer.connect(source.replayEndpoint());
        }
        dealer.sendMore(new byte[0]);
        dealer.send(ByteBuffer.allocate(8).putLong(start).array());
        int n = 0;
        while (!closed && n < settings.maxReplayBatches()) {
            List<byte[]> f = recv(dealer);
            if (f == null) {
                LOG.infof("engine events: source %s pod %s: replay from %d timed out after %d batches", name, pod,
                        start, n);
                closeDealer(); // late replies must not be read as the answer to the next request
                return n > 0;
            }
            if (f.size() < 3 || f.size() > 4 || f.get(0).length != 0 || f.get(f.size() - 2).length < 8) {
                applier.malformed("source " + name + ": a replay reply of " + f.size() + " frames");
                continue;
            }
            long r = ByteBuffer.wrap(f.get(f.size() - 2)).getLong();
            if (r == END_SEQ) {
                return true;
            }
            n++;
            if (cursor.newer(r)) {
                forward(basePod, r, f.get(f.size() - 1));
                cursor.applied(r);
            }
        }
        if (n >= settings.maxReplayBatches()) {
            closeDealer(); // the rest of a huge replay is dropped; the applier sees what is missing
        }
        return true;
    }

    private void closeDealer() {
        if (dealer != null) {
            ctx.destroySocket(dealer);
            dealer = null;
        }
    }

    @Override
    public void close() {
        closed = true;
        try {
            thread.join(5000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
