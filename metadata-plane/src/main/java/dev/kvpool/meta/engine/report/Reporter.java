package dev.kvpool.meta.engine.report;

import dev.kvpool.meta.registry.EventReportStorage;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.TreeSet;

/**
 * One reporter (instance_id, storage_type, host_ip_port; kvcm-engine-events.md §4.1) and the block locations it
 * reported: block key → medium → spec name → stored spec. Fields are guarded by this object's monitor; the
 * persisted copy of the locations is written under {@link #persist} so that concurrent requests write the newest
 * state last.
 */
final class Reporter {
    /** A stored spec: its URI (with s_version) and the token that URI carries ("" legacy, null malformed). */
    record Spec(String uri, String version) {
        static Spec of(String uri) {
            return new Spec(uri, Uris.versionOf(uri));
        }
    }

    final String instance;
    final boolean l2;
    final String host;
    /** The pod name in the shared engine view: host_ip_port, "#l2" appended for the peer-shareable tier. */
    final String pod;
    final ReporterGate gate = new ReporterGate();
    final Object persist = new Object();

    EventReportStorage storage;
    String generation;
    /** After a successful snapshot in this process: only locations carrying the generation are visible. */
    boolean strict;
    /** Sent at least one valid event in this process (persisted reporters stay hidden until then). */
    boolean seen;
    boolean tombstoned;
    boolean gcPending;
    boolean available = true;
    long lastHeartbeatMs;
    long lifecycle;
    long lastSnapshotCommitMs;
    boolean snapshotCommitted;
    final TreeSet<String> mediums = new TreeSet<>();
    final HashMap<Long, Map<String, Map<String, Spec>>> blocks = new HashMap<>();
    /** (block, medium) locations held. */
    long locations;

    Reporter(String instance, boolean l2, String host) {
        this.instance = instance;
        this.l2 = l2;
        this.host = host;
        this.pod = l2 ? host + "#l2" : host;
    }

    /** Specs of one location, or null. */
    Map<String, Spec> location(long key, String medium) {
        Map<String, Map<String, Spec>> m = blocks.get(key);
        return m == null ? null : m.get(medium);
    }

    /** Sets the given specs; true when the location is new. */
    boolean put(long key, String medium, Map<String, Spec> specs) {
        Map<String, Spec> loc = blocks.computeIfAbsent(key, k -> new HashMap<>(2))
                .computeIfAbsent(medium, m -> new LinkedHashMap<>(2));
        boolean fresh = loc.isEmpty();
        loc.putAll(specs);
        if (fresh) {
            locations++;
        }
        return fresh;
    }

    /** Removes the named specs; true when the location is gone with them. */
    boolean remove(long key, String medium, Iterable<String> names) {
        Map<String, Map<String, Spec>> m = blocks.get(key);
        Map<String, Spec> loc = m == null ? null : m.get(medium);
        if (loc == null) {
            return false;
        }
        for (String n : names) {
            loc.remove(n);
        }
        if (!loc.isEmpty()) {
            return false;
        }
        m.remove(medium);
        if (m.isEmpty()) {
            blocks.remove(key);
        }
        locations--;
        return true;
    }

    void clearBlocks() {
        blocks.clear();
        locations = 0;
    }

    /** Visible to queries now (§4.5, §4.7): seen in this process, not tombstoned, heartbeat within the timeout. */
    boolean live(long nowMs) {
        return seen && !tombstoned && storage != null && nowMs - lastHeartbeatMs <= storage.heartbeatTimeoutMs();
    }

    /** A location counts when it has a spec, every URI is well formed, and (strict) one carries the generation. */
    boolean visible(Map<String, Spec> loc) {
        if (loc == null || loc.isEmpty()) {
            return false;
        }
        boolean current = false;
        for (Spec s : loc.values()) {
            if (s.version() == null) {
                return false; // fail closed
            }
            if (s.version().equals(generation)) {
                current = true;
            }
        }
        return !strict || current;
    }

    /** True when this reporter holds a visible location of the key in one of the media (all when empty). */
    boolean holds(long key, java.util.Set<String> media) {
        Map<String, Map<String, Spec>> m = blocks.get(key);
        if (m == null) {
            return false;
        }
        for (var e : m.entrySet()) {
            if ((media.isEmpty() || media.contains(e.getKey())) && visible(e.getValue())) {
                return true;
            }
        }
        return false;
    }

    /** Keys per tier (medium lower-cased) for the shared engine view. */
    Map<String, long[]> tiers() {
        Map<String, java.util.List<Long>> by = new HashMap<>();
        blocks.forEach((k, m) -> m.keySet().forEach(md -> by.computeIfAbsent(md.toLowerCase(java.util.Locale.ROOT),
                x -> new java.util.ArrayList<>()).add(k)));
        Map<String, long[]> out = new HashMap<>();
        by.forEach((t, l) -> out.put(t, l.stream().mapToLong(Long::longValue).toArray()));
        return out;
    }
}
