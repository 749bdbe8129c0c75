package dev.kvpool.meta.engine.ingest;

import java.time.Instant;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * What KVPool knows about each event-fed pod (instance, pod id with its {@code /dp<rank>} suffix): which source feeds
 * it, whether its view is complete, its last applied sequence number and event time. Written by the ingest threads,
 * read by the REST API.
 */
public final class PodStates {

    public enum State {
        /** Every batch since an authoritative point (sequence 0, AllBlocksCleared) has been applied. */
        LIVE("live"),
        /** A replay request is in flight for this pod. */
        REPLAYING("replaying"),
        /**
         * Batches are missing (a gap the replay could not fill, or the first batch seen was past 0): the view may hold
         * blocks the engine dropped and miss blocks it holds, until AllBlocksCleared or a new epoch from 0.
         */
        UNCERTAIN("uncertain");

        public final String label;

        State(String label) {
            this.label = label;
        }
    }

    public static final class Pod {
        public final String source;
        volatile State state = State.LIVE;
        volatile boolean replaying;
        volatile long lastSeq = -1;
        volatile Instant lastEventAt;

        Pod(String source) {
            this.source = source;
        }

        public State state() {
            return replaying ? State.REPLAYING : state;
        }

        public long lastSeq() {
            return lastSeq;
        }

        public Instant lastEventAt() {
            return lastEventAt;
        }
    }

    record Key(String instance, String pod) {
    }

    private final Map<Key, Pod> pods = new ConcurrentHashMap<>();

    Pod pod(String instance, String pod, String source) {
        return pods.computeIfAbsent(new Key(instance, pod), k -> new Pod(source));
    }

    /** The state of a pod KVPool ingests events for, or null for one it does not (a KVCM reporter). */
    public Pod get(String instance, String pod) {
        return pods.get(new Key(instance, pod));
    }

    void replaying(String instance, String pod, String source, boolean on) {
        pod(instance, pod, source).replaying = on;
    }

    void markUncertain(String instance, String pod, String source) {
        pod(instance, pod, source).state = State.UNCERTAIN;
    }

    public long count(State s) {
        return pods.values().stream().filter(p -> p.state() == s).count();
    }

    public Map<String, Pod> ofInstance(String instance) {
        Map<String, Pod> out = new java.util.TreeMap<>();
        pods.forEach((k, v) -> {
            if (k.instance().equals(instance)) {
                out.put(k.pod(), v);
            }
        });
        return out;
    }

    /** Instance → number of event-fed pods. */
    public Map<String, Integer> instances() {
        Map<String, Integer> out = new java.util.TreeMap<>();
        pods.keySet().forEach(k -> out.merge(k.instance(), 1, Integer::sum));
        return out;
    }

    /** Forgets the pods {@code source} fed; returns them as (instance, pod) pairs, so their blocks can be dropped. */
    java.util.List<Key> forgetSource(String source) {
        java.util.List<Key> gone = new java.util.ArrayList<>();
        pods.forEach((k, v) -> {
            if (v.source.equals(source)) {
                gone.add(k);
            }
        });
        gone.forEach(pods::remove);
        return gone;
    }
}
