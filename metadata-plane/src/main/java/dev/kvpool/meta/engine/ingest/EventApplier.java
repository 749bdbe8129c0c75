package dev.kvpool.meta.engine.ingest;

import dev.kvpool.engine.event.EngineEvent;
import dev.kvpool.engine.event.EventBatch;
import dev.kvpool.engine.event.KvEventDecoder;
import dev.kvpool.engine.event.SequenceCursor;
import dev.kvpool.engine.view.EngineView;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import java.time.Clock;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Function;
import org.jboss.logging.Logger;

/**
 * Applies engine KV-event batches to the engine view, whichever way they came (ZMQ directly, or the
 * {@code kvpool.engine-events} Kafka topic). Keeps a sequence cursor per (instance, pod with DP rank) and derives the
 * pod's state from it:
 * <ul>
 * <li>the next sequence number: applied; a gap the replay could not fill: applied, pod <em>uncertain</em>;</li>
 * <li>a drop back (the engine restarted: a new epoch): the pod's blocks are cleared, then the batch is applied; live
 * again when the new epoch starts at 0;</li>
 * <li>the first batch ever seen: live when it is sequence 0, else uncertain (what came before is unknown);</li>
 * <li>AllBlocksCleared makes a pod live again (the engine's own authoritative point).</li>
 * </ul>
 * A DP rank &gt; 0 makes the pod {@code <pod>/dp<rank>} (ranks are separate caches). Only KV-cache group 0 (or none)
 * is applied: a hybrid model publishes the same blocks once per group, and prefix scores are about the full-attention
 * group; other groups are counted and skipped. A batch that does not decode is skipped and counted; nothing here
 * throws to the caller's loop. Calls are serialized (one lock): batches of one pod must apply in order anyway, and a
 * view update is microseconds.
 */
public final class EventApplier {
    private static final Logger LOG = Logger.getLogger(EventApplier.class);

    private final EngineView view;
    private final PodStates states;
    private final Clock clock;
    /** Source name → its medium aliases (a Kafka record names its source). */
    private final Function<String, Map<String, String>> aliases;
    private final Map<PodStates.Key, SequenceCursor> cursors = new ConcurrentHashMap<>();
    private final Counter batches, events, malformed, gaps, resets, duplicates, otherGroups;

    public EventApplier(EngineView view, PodStates states, Clock clock, Function<String, Map<String, String>> aliases,
                        MeterRegistry meters) {
        this.view = view;
        this.states = states;
        this.clock = clock;
        this.aliases = aliases;
        batches = Counter.builder("kvpool.engine.ingest.batches").description("engine KV-event batches applied")
                .register(meters);
        events = Counter.builder("kvpool.engine.ingest.events").description("engine KV events applied to the view")
                .register(meters);
        malformed = Counter.builder("kvpool.engine.ingest.malformed")
                .description("batches (or events) skipped because they did not decode or named an unusable pod/tier")
                .register(meters);
        gaps = Counter.builder("kvpool.engine.ingest.gaps")
                .description("sequence gaps the replay did not fill (the pod became uncertain)").register(meters);
        resets = Counter.builder("kvpool.engine.ingest.resets")
                .description("sequence drops (engine restarts): the pod's blocks were cleared").register(meters);
        duplicates = Counter.builder("kvpool.engine.ingest.duplicates")
                .description("batches seen before (replay overlap), skipped").register(meters);
        otherGroups = Counter.builder("kvpool.engine.ingest.skipped-groups")
                .description("events of a KV-cache group other than 0, not applied").register(meters);
        Gauge.builder("kvpool.engine.ingest.pods.uncertain", states, s -> s.count(PodStates.State.UNCERTAIN))
                .description("event-fed pods whose view is incomplete").register(meters);
    }

    public long malformed() {
        return (long) malformed.count();
    }

    public long gaps() {
        return (long) gaps.count();
    }

    public long batches() {
        return (long) batches.count();
    }

    /** Counts a batch that never reached decoding (bad frames, a bad Kafka header). */
    void malformed(String why) {
        malformed.increment();
        LOG.debugf("engine KV-event batch skipped: %s", why);
    }

    /**
     * Applies one batch as published by {@code basePod} (its rank is in the payload).
     *
     * @return the pod id the batch was applied to, or null when it was skipped
     */
    public synchronized String apply(String instance, String basePod, String source, long seq, byte[] payload) {
        if (seq == SequenceCursor.END_SEQ) {
            malformed(instance + "/" + basePod + ": batch numbered END_SEQ (FF..FF)");
            return null;
        }
        EventBatch batch;
        try {
            batch = KvEventDecoder.decode(payload);
        } catch (KvEventDecoder.MalformedEventException e) {
            malformed(instance + "/" + basePod + " seq " + seq + ": " + e.getMessage());
            return null;
        } catch (RuntimeException e) { // the decoder promises not to; a bug there must not stop ingest
            malformed(instance + "/" + basePod + " seq " + seq + ": " + e);
            return null;
        }
        Integer rank = batch.dataParallelRank();
        if (rank != null && (rank < 0 || rank > 65535)) {
            malformed(instance + "/" + basePod + ": data_parallel_rank " + rank);
            return null;
        }
        String pod = podId(basePod, rank);
        if (EngineSource.podProblem(pod) != null) {
            malformed("pod id of " + basePod + ": " + EngineSource.podProblem(pod));
            return null;
        }
        PodStates.Key key = new PodStates.Key(instance, pod);
        PodStates.Pod st = states.pod(instance, pod, source);
        SequenceCursor cursor = cursors.get(key);
        if (cursor == null) {
            cursor = new SequenceCursor();
            cursors.put(key, cursor);
            // nothing before this batch is known: complete only when the stream starts here
            st.state = seq == 0 ? PodStates.State.LIVE : PodStates.State.UNCERTAIN;
        } else {
            switch (cursor.offer(seq)) {
                case APPLY -> {
                }
                case DUPLICATE -> {
                    duplicates.increment();
                    return null;
                }
                case GAP -> {
                    gaps.increment();
                    st.state = PodStates.State.UNCERTAIN;
                    LOG.infof("engine events of %s pod %s: batches %d..%d missing, the pod is uncertain until "
                            + "AllBlocksCleared or an engine restart", instance, pod, cursor.next(), seq - 1);
                }
                case RESET -> {
                    resets.increment();
                    cursor = new SequenceCursor(); // a new epoch: count from this batch on
                    cursors.put(key, cursor);
                    view.clearPod(instance, pod);
                    st.state = seq == 0 ? PodStates.State.LIVE : PodStates.State.UNCERTAIN;
                    LOG.infof("engine events of %s pod %s: sequence dropped to %d (engine restart): blocks cleared",
                            instance, pod, seq);
                }
            }
        }
        cursor.applied(seq);
        Map<String, String> al = aliases.apply(source);
        for (EngineEvent e : batch.events()) {
            try {
                applyEvent(instance, pod, st, al, e);
            } catch (RuntimeException ex) { // the view refused it (e.g. too many distinct tiers): count, go on
                malformed(instance + "/" + pod + " seq " + seq + ": " + ex.getMessage());
            }
        }
        st.lastSeq = seq;
        st.lastEventAt = clock.instant();
        batches.increment();
        return pod;
    }

    private void applyEvent(String instance, String pod, PodStates.Pod st, Map<String, String> al, EngineEvent e) {
        switch (e) {
            case EngineEvent.BlockStored s -> {
                String tier = tier(al, s.medium());
                if (tier == null) {
                    return;
                }
                if (s.groupIdx() != null && s.groupIdx() != 0) {
                    otherGroups.increment();
                    return;
                }
                view.store(instance, pod, tier, s.blockHashes());
            }
            case EngineEvent.BlockRemoved r -> {
                String tier = tier(al, r.medium());
                if (tier == null) {
                    return;
                }
                if (r.groupIdx() != null && r.groupIdx() != 0) {
                    otherGroups.increment();
                    return;
                }
                view.remove(instance, pod, tier, r.blockHashes());
            }
            case EngineEvent.AllBlocksCleared c -> {
                view.clearPod(instance, pod);
                st.state = PodStates.State.LIVE;
            }
        }
        events.increment();
    }

    private String tier(Map<String, String> al, String medium) {
        String tier = EngineSource.tierOf(al, medium);
        if (EngineSource.tierProblem(tier) != null) {
            malformed.increment();
            return null;
        }
        return tier;
    }

    /** Rank 0 (or none) keeps the pod id; rank r &gt; 0 is {@code <pod>/dp<r>}. */
    public static String podId(String basePod, Integer rank) {
        return rank == null || rank == 0 ? basePod : basePod + "/dp" + rank;
    }

    /** Forgets the cursors of pods whose source was removed (their blocks are cleared by the caller). */
    synchronized void forget(PodStates.Key key) {
        cursors.remove(key);
        view.clearPod(key.instance(), key.pod());
    }
}
