package dev.kvpool.meta.engine.report;

import dev.kvpool.api.json.ProtoJson;
import dev.kvpool.api.limits.Limits;
import dev.kvpool.api.naming.Text;
import dev.kvpool.api.proto.meta.*;
import dev.kvpool.engine.view.EngineView;
import dev.kvpool.meta.engine.EngineCaches;
import dev.kvpool.meta.core.MetaException;
import dev.kvpool.meta.kvcm.KvcmCodes;
import dev.kvpool.meta.kvcm.KvcmReports;
import dev.kvpool.meta.registry.EventReportStorage;
import dev.kvpool.meta.registry.GroupConfig;
import dev.kvpool.meta.registry.Instance;
import dev.kvpool.meta.registry.Registry;
import dev.kvpool.meta.runtime.MetaRuntime;
import jakarta.annotation.PreDestroy;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.inject.Inject;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BooleanSupplier;
import org.jboss.logging.Logger;

/**
 * KVCM ReportEvent and GetHostCacheState (kvcm-engine-events.md Part 1, K1 semantics): the reporter table (in
 * memory: generation, lifecycle, write gate, snapshot rate limit, liveness, tombstone), the reported block metadata
 * (persisted through {@link ReportRecords}), and its mirror in the shared {@link EngineView}. Both transports call
 * here after their token check; logical errors come back in header.status, never as exceptions.
 */
@ApplicationScoped
public class EngineReports implements KvcmReports {
    private static final Logger LOG = Logger.getLogger(EngineReports.class);

    /** Input bounds (README "Engine cache events"): beyond them a request is INVALID_ARGUMENT naming the field. */
    public static final int MAX_EVENTS = 100_000, MAX_SNAPSHOT_BLOCKS = 1_000_000, MAX_QUERY_KEYS = 100_000,
            MAX_MEDIUM = 64, MAX_HOST = 255, MAX_MEDIA = 64, MAX_REPORTERS_PER_INSTANCE = 10_000;

    @Inject
    MetaRuntime runtime;
    @Inject
    EngineCaches caches;
    @Inject
    EngineReportSettings settings;

    private volatile Clock clock = Clock.systemUTC();
    private volatile BooleanSupplier leaderOverride;
    private final ConcurrentHashMap<String, InstanceReports> instances = new ConcurrentHashMap<>();
    private final Map<String, Long> lastSweep = new ConcurrentHashMap<>();
    private volatile ScheduledExecutorService sweeper;

    /** One instance's reporters and its location count (bounded). */
    static final class InstanceReports {
        final String id;
        final ConcurrentHashMap<String, Reporter> reporters = new ConcurrentHashMap<>();
        final AtomicLong locations = new AtomicLong();

        InstanceReports(String id) {
            this.id = id;
        }
    }

    // ---- test and wiring hooks ---------------------------------------------------------------------------------

    /** Replaces the time source (tests move time instead of sleeping). */
    public void clock(Clock c) {
        this.clock = c;
    }

    /** Overrides the leader check (tests that play a follower); null restores the replica's own leadership. */
    public void leaderOverride(BooleanSupplier leader) {
        this.leaderOverride = leader;
    }

    /**
     * Forgets all in-memory reporter state, as a process restart does; persisted block metadata is loaded again
     * on the next call. The real restart is covered by EngineReportRestartIT.
     */
    public void forgetReporters() {
        instances.values().forEach(ir -> ir.reporters.values().forEach(r -> view().clearPod(ir.id, r.pod)));
        instances.clear();
    }

    /** Reporters known in this process for an instance (tests, debugging). */
    public int reporters(String instance) {
        InstanceReports ir = instances.get(instance);
        return ir == null ? 0 : ir.reporters.size();
    }

    /** A known reporter's write gate (tests hold it to play a concurrent snapshot or delta), or null. */
    ReporterGate gate(String instance, boolean l2, String host) {
        InstanceReports ir = instances.get(instance);
        Reporter r = ir == null ? null : ir.reporters.get(key(l2, host));
        return r == null ? null : r.gate;
    }

    /** The stored specs (name → URI with s_version) of one reported location, or an empty map. */
    public Map<String, String> storedSpecs(String instance, boolean l2, String host, long key, String medium) {
        InstanceReports ir = instances.get(instance);
        Reporter r = ir == null ? null : ir.reporters.get(key(l2, host));
        Map<String, String> out = new LinkedHashMap<>();
        if (r != null) {
            synchronized (r) {
                Map<String, Reporter.Spec> loc = r.location(key, medium);
                if (loc != null) {
                    loc.forEach((n, sp) -> out.put(n, sp.uri()));
                }
            }
        }
        return out;
    }

    private boolean leader() {
        BooleanSupplier o = leaderOverride;
        if (o != null) {
            return o.getAsBoolean();
        }
        return runtime.ready() && runtime.leadership() != null && runtime.leadership().isLeader();
    }

    private long now() {
        return clock.millis();
    }

    private EngineView view() {
        return caches.view();
    }

    private Registry registry() {
        return runtime.registry();
    }

    private ReportRecords records() {
        return new ReportRecords(runtime.store());
    }

    // ---- plumbing -----------------------------------------------------------------------------------------------

    private static CommonResponseHeader header(String traceId, ErrorCode code, String message) {
        return CommonResponseHeader.newBuilder()
                .setStatus(Status.newBuilder().setCode(code).setMessage(message == null ? "" : message))
                .setRequestId(traceId + "_" + (System.currentTimeMillis() * 1000 + (System.nanoTime() / 1000) % 1000))
                .build();
    }

    private void gate(String traceId) {
        if (!leader()) {
            throw new MetaException(MetaException.Kind.NOT_LEADER, "Server is not leader");
        }
        String p = Text.opaqueProblem(traceId, Limits.MAX_TEXT);
        if (p != null) {
            throw MetaException.invalid("trace_id: " + p);
        }
    }

    private Instance instance(String id) {
        if (id.isEmpty()) {
            throw MetaException.invalid("instance_id is empty");
        }
        Instance inst = registry().lookup(id);
        if (inst == null) {
            throw MetaException.noInstance("instance '" + Text.safe(id) + "' is not registered");
        }
        return inst;
    }

    private InstanceReports state(String id) {
        InstanceReports ir = instances.get(id);
        if (ir != null) {
            return ir;
        }
        return instances.computeIfAbsent(id, this::load);
    }

    /** The instance's persisted locations, as reporters not seen in this process yet (hidden until they report). */
    private InstanceReports load(String id) {
        InstanceReports ir = new InstanceReports(id);
        long n = 0;
        for (ReportRecords.Loaded l : records().load(id)) {
            Reporter r = ir.reporters.computeIfAbsent(key(l.l2(), l.host()), k -> new Reporter(id, l.l2(), l.host()));
            if (r.put(l.key(), l.medium(), l.specs())) {
                n++;
            }
        }
        ir.locations.set(n);
        if (n > 0) {
            LOG.infof("instance %s: %d reported block locations of %d reporters loaded (hidden until each reports "
                    + "again, then visible in soft mode)", id, n, ir.reporters.size());
        }
        return ir;
    }

    private static String key(boolean l2, String host) {
        return (l2 ? "l2#" : "l1p5#") + host;
    }

    private long cap(Instance inst) {
        GroupConfig g = registry().group(inst.group);
        return g != null && g.maxKeyCount() > 0 ? g.maxKeyCount() : settings.maxLocationsPerInstance();
    }

    // ---- ReportEvent --------------------------------------------------------------------------------------------

    public ReportEventResponse reportEvent(ReportEventRequest q) {
        try {
            return report(q);
        } catch (MetaException e) {
            return ReportEventResponse.newBuilder().setHeader(header(q.getTraceId(), KvcmCodes.code(e.kind()),
                    e.getMessage())).build();
        } catch (RuntimeException e) {
            LOG.errorf(e, "ReportEvent failed (trace %s)", Text.safe(q.getTraceId()));
            return ReportEventResponse.newBuilder().setHeader(header(q.getTraceId(), ErrorCode.INTERNAL_ERROR,
                    "ReportEvent failed: " + e)).build();
        }
    }

    static String hostProblem(String host) {
        if (host.isEmpty()) {
            return "host_ip_port is empty";
        }
        if (host.length() > MAX_HOST) {
            return "host_ip_port is longer than " + MAX_HOST + " characters";
        }
        if (host.indexOf('#') >= 0) {
            return "host_ip_port must not contain '#'";
        }
        for (int i = 0; i < host.length(); i++) {
            if (host.charAt(i) <= ' ' || host.charAt(i) == 0x7f) {
                return "host_ip_port contains a space or control character";
            }
        }
        return null;
    }

    static String mediumProblem(String field, String medium) {
        if (medium.isEmpty()) {
            return field + " is empty";
        }
        if (medium.length() > MAX_MEDIUM) {
            return field + " is longer than " + MAX_MEDIUM + " characters";
        }
        if (medium.indexOf('#') >= 0) {
            return field + " must not contain '#'";
        }
        for (int i = 0; i < medium.length(); i++) {
            if (medium.charAt(i) < ' ' || medium.charAt(i) == 0x7f) {
                return field + " contains a control character";
            }
        }
        return null;
    }

    /** Item failure: the code and why. */
    record Fail(ErrorCode code, String message) {
    }

    private static Fail invalid(int i, String what) {
        return new Fail(ErrorCode.INVALID_ARGUMENT, "events[" + i + "]: " + what);
    }

    /** The oneof member an event type needs; null when the member is missing or another one. */
    private static String memberProblem(EventItem e) {
        EventItem.EventParamsCase want = switch (e.getEventType()) {
            case EVENT_NODE_REGISTER -> EventItem.EventParamsCase.NODE_REGISTER;
            case EVENT_BLOCK_ADD -> EventItem.EventParamsCase.BLOCK_ADD;
            case EVENT_BLOCK_DELETE -> EventItem.EventParamsCase.BLOCK_DELETE;
            case EVENT_HOST_DOWN -> EventItem.EventParamsCase.HOST_DOWN;
            case EVENT_HEARTBEAT -> EventItem.EventParamsCase.HEARTBEAT;
            case EVENT_BLOCK_SNAPSHOT -> EventItem.EventParamsCase.BLOCK_SNAPSHOT;
            default -> null;
        };
        if (want == null) {
            return "event_type must be one of EVENT_NODE_REGISTER .. EVENT_BLOCK_SNAPSHOT";
        }
        if (e.getEventParamsCase() != want) {
            return "event_type " + e.getEventType() + " needs the " + want.name().toLowerCase() + " member";
        }
        return null;
    }

    /** Validated specs of an ADD or snapshot item (URIs without s_version yet); throws the item's problem. */
    private static Map<String, String> specs(List<LocationSpec> in, Set<String> registered, String field) {
        if (in.isEmpty()) {
            throw new IllegalArgumentException(field + " is empty");
        }
        if (in.size() > registered.size()) {
            throw new IllegalArgumentException(field + " has " + in.size() + " specs, the instance registered "
                    + registered.size());
        }
        Map<String, String> out = new LinkedHashMap<>();
        for (LocationSpec s : in) {
            if (s.getName().isEmpty()) {
                throw new IllegalArgumentException(field + ": a spec name is empty");
            }
            if (!registered.contains(s.getName())) {
                throw new IllegalArgumentException(field + ": spec '" + Text.safe(s.getName())
                        + "' is not registered for the instance");
            }
            String p = Uris.problem(s.getUri());
            if (p != null) {
                throw new IllegalArgumentException(field + " '" + s.getName() + "': " + p);
            }
            if (out.put(s.getName(), s.getUri()) != null) {
                throw new IllegalArgumentException(field + ": spec '" + s.getName() + "' is given twice");
            }
        }
        return out;
    }

    private static void checkMedium(String field, String medium) {
        String p = mediumProblem(field, medium);
        if (p != null) {
            throw new IllegalArgumentException(p);
        }
    }

    private static long blockKey(String field, String text) {
        try {
            return BlockKeys.parse(text);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(field + ": " + e.getMessage());
        }
    }

    /** A validated delta: ADD (specs set) or DELETE (names). */
    record Delta(boolean add, long key, String medium, Map<String, String> specs, List<String> names) {
    }

    private static Delta delta(EventItem e, Set<String> registered) {
        if (e.hasBlockAdd()) {
            BlockAddEventParams a = e.getBlockAdd();
            long k = blockKey("block_add.block_key", a.getBlockKey());
            checkMedium("block_add.medium", a.getMedium());
            return new Delta(true, k, a.getMedium(), specs(a.getSpecsList(), registered, "block_add.specs"), null);
        }
        BlockDeleteEventParams d = e.getBlockDelete();
        long k = blockKey("block_delete.block_key", d.getBlockKey());
        checkMedium("block_delete.medium", d.getMedium());
        if (d.getSpecNamesCount() == 0) {
            throw new IllegalArgumentException("block_delete.spec_names is empty");
        }
        if (d.getSpecNamesCount() > registered.size()) {
            throw new IllegalArgumentException("block_delete.spec_names has more names than the instance registered");
        }
        Set<String> seen = new HashSet<>();
        for (String n : d.getSpecNamesList()) {
            if (n.isEmpty() || !registered.contains(n)) {
                throw new IllegalArgumentException("block_delete.spec_names: '" + Text.safe(n)
                        + "' is not a registered spec name");
            }
            if (!seen.add(n)) {
                throw new IllegalArgumentException("block_delete.spec_names: '" + n + "' is given twice");
            }
        }
        return new Delta(false, k, d.getMedium(), null, d.getSpecNamesList());
    }

    /** A validated snapshot: (key, medium) → spec → client URI. */
    private static Map<Long, Map<String, Map<String, String>>> snapshot(BlockSnapshotEventParams s,
                                                                         Set<String> registered) {
        if (s.getBlocksCount() > MAX_SNAPSHOT_BLOCKS) {
            throw new IllegalArgumentException("block_snapshot.blocks has " + s.getBlocksCount()
                    + " items, at most " + MAX_SNAPSHOT_BLOCKS);
        }
        String legacy = s.getMedium(); // deprecated top-level medium: used by items that leave theirs empty (§3)
        Map<Long, Map<String, Map<String, String>>> out = new HashMap<>(Math.max(16, s.getBlocksCount() * 2));
        for (int j = 0; j < s.getBlocksCount(); j++) {
            BlockSnapshotItem b = s.getBlocks(j);
            String f = "block_snapshot.blocks[" + j + "]";
            long k = blockKey(f + ".block_key", b.getBlockKey());
            String medium = b.getMedium().isEmpty() ? legacy : b.getMedium();
            checkMedium(f + ".medium", medium);
            Map<String, String> sp = specs(b.getSpecsList(), registered, f + ".specs");
            if (out.computeIfAbsent(k, x -> new HashMap<>(2)).put(medium, sp) != null) {
                throw new IllegalArgumentException(f + ": (block_key, medium) (" + k + ", " + medium
                        + ") is listed twice");
            }
        }
        return out;
    }

    private ReportEventResponse report(ReportEventRequest q) {
        gate(q.getTraceId());
        Instance inst = instance(q.getInstanceId());
        String hp = hostProblem(q.getHostIpPort());
        if (hp != null) {
            throw MetaException.invalid(hp);
        }
        GroupConfig group = registry().group(inst.group);
        String extra = group == null || group.extraInfo() == null ? "" : group.extraInfo();
        int n = q.getEventsCount();
        if (n == 0) { // no-op: no reporter, no liveness, no generation (an empty request cannot read it)
            return ReportEventResponse.newBuilder().setHeader(header(q.getTraceId(), ErrorCode.OK, ""))
                    .setExtraInfo(extra).build();
        }
        boolean l2;
        switch (q.getStorageTypeValue()) {
            case StorageType.ST_EVENT_REPORT_L1P5_VALUE -> l2 = false;
            case StorageType.ST_EVENT_REPORT_L2_VALUE -> l2 = true;
            default -> throw MetaException.invalid("storage_type must be ST_EVENT_REPORT_L1P5 or ST_EVENT_REPORT_L2, got "
                    + q.getStorageType());
        }
        EventReportStorage st = registry().eventReportStorageFor(inst.group, l2);
        if (st == null) {
            throw MetaException.noInstance("instance group '" + inst.group + "' lists no "
                    + (l2 ? "ST_EVENT_REPORT_L2" : "ST_EVENT_REPORT_L1P5") + " storage in event_report_storage_candidates");
        }
        if (n > MAX_EVENTS) {
            throw MetaException.invalid("events has " + n + " items, at most " + MAX_EVENTS);
        }
        int snapshots = 0, deltas = 0, downs = 0;
        for (EventItem e : q.getEventsList()) {
            switch (e.getEventType()) {
                case EVENT_BLOCK_SNAPSHOT -> snapshots++;
                case EVENT_BLOCK_ADD, EVENT_BLOCK_DELETE -> deltas++;
                case EVENT_HOST_DOWN -> downs++;
                default -> {
                }
            }
        }
        if (snapshots > 1) {
            throw MetaException.invalid("events: at most one EVENT_BLOCK_SNAPSHOT per request");
        }
        if (snapshots == 1 && deltas > 0) {
            throw MetaException.invalid("events: EVENT_BLOCK_SNAPSHOT cannot be combined with EVENT_BLOCK_ADD/DELETE");
        }
        if (downs > 0 && downs < n) {
            throw MetaException.invalid("events: EVENT_HOST_DOWN must be alone in its request");
        }
        InstanceReports ir = state(inst.id);
        if (ir.reporters.size() >= MAX_REPORTERS_PER_INSTANCE && !ir.reporters.containsKey(key(l2, q.getHostIpPort()))) {
            throw MetaException.capacity("instance " + inst.id + " has " + MAX_REPORTERS_PER_INSTANCE
                    + " reporters, the bound");
        }
        return new Run(q, inst, st, l2, extra).run();
    }

    /** One admitted ReportEvent request, processed in array order. */
    private final class Run {
        final ReportEventRequest q;
        final Instance inst;
        final EventReportStorage st;
        final InstanceReports ir;
        final Reporter r;
        final String extra;
        final Set<String> registered;
        final Fail[] fails;
        boolean deltaAdmitted, deltaRefused, registered1, snapshotOk;
        long lifecycleSeen;
        long retryAfter;
        /** Locations this request changed: persisted before the delta lease is given back (folded: once each). */
        final Set<Map.Entry<Long, String>> dirty = new java.util.LinkedHashSet<>();
        final List<Integer> applied = new ArrayList<>();

        Run(ReportEventRequest q, Instance inst, EventReportStorage st, boolean l2, String extra) {
            this.q = q;
            this.inst = inst;
            this.st = st;
            this.extra = extra;
            this.ir = state(inst.id);
            this.r = ir.reporters.computeIfAbsent(key(l2, q.getHostIpPort()), k -> new Reporter(inst.id, l2,
                    q.getHostIpPort()));
            this.registered = Set.of(inst.specNames);
            this.fails = new Fail[q.getEventsCount()];
        }

        ReportEventResponse run() {
            boolean required;
            synchronized (r) {
                required = r.generation == null;
                r.storage = st;
                lifecycleSeen = r.lifecycle;
            }
            try {
                for (int i = 0; i < fails.length; i++) {
                    fails[i] = item(i, q.getEvents(i));
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw MetaException.internal("interrupted");
            } finally {
                if (deltaAdmitted) {
                    try {
                        flush();
                    } finally {
                        r.gate.endDelta();
                    }
                }
            }
            ReportEventResponse.Builder b = ReportEventResponse.newBuilder().setExtraInfo(extra);
            Fail first = null;
            for (Fail f : fails) {
                if (f != null) {
                    first = f;
                    break;
                }
            }
            if (first != null) {
                for (Fail f : fails) {
                    b.addItemResults(f == null ? ErrorCode.OK : f.code());
                }
            }
            synchronized (r) {
                b.setCommittedSnapshotVersion(r.generation == null ? "" : r.generation);
            }
            b.setSnapshotRequired(required && !snapshotOk);
            b.setRetryAfterMs(retryAfter);
            b.setHeader(first == null ? header(q.getTraceId(), ErrorCode.OK, "")
                    : header(q.getTraceId(), first.code(), first.message()));
            return b.build();
        }

        /** Marks the reporter as seen in this process; the first time, its persisted blocks join the view. */
        private void seen(long now) {
            if (!r.seen) {
                r.seen = true;
                r.available = true;
                r.lastHeartbeatMs = now;
                if (r.locations > 0) {
                    view().replace(r.instance, r.pod, r.tiers());
                }
            }
        }

        private Fail item(int i, EventItem e) throws InterruptedException {
            String mp = memberProblem(e);
            if (mp != null) {
                return invalid(i, mp);
            }
            return switch (e.getEventType()) {
                case EVENT_NODE_REGISTER -> register(i, e);
                case EVENT_HEARTBEAT -> heartbeat();
                case EVENT_BLOCK_ADD, EVENT_BLOCK_DELETE -> delta(i, e);
                case EVENT_BLOCK_SNAPSHOT -> snapshot(i, e.getBlockSnapshot());
                case EVENT_HOST_DOWN -> hostDown();
                default -> invalid(i, "unknown event_type");
            };
        }

        private Fail register(int i, EventItem e) {
            List<String> media = new ArrayList<>();
            for (EventItem x : q.getEventsList()) { // several REGISTERs: merged, executed once, one shared result
                if (x.getEventType() == ReportEventType.EVENT_NODE_REGISTER && x.hasNodeRegister()) {
                    media.addAll(x.getNodeRegister().getMediumsList());
                }
            }
            if (media.size() > MAX_MEDIA) {
                return invalid(i, "node_register.mediums has more than " + MAX_MEDIA + " entries");
            }
            for (String m : media) {
                String p = mediumProblem("node_register.mediums", m);
                if (p != null) {
                    return invalid(i, p);
                }
            }
            if (registered1) {
                return null;
            }
            registered1 = true;
            long now = now();
            boolean reappear;
            synchronized (r) {
                reappear = r.tombstoned || !r.seen || !r.available;
                r.tombstoned = false;
                r.gcPending = false; // un-collected history may reappear (soft)
                r.lifecycle++;
                lifecycleSeen = r.lifecycle;
                r.mediums.addAll(media);
                r.seen = true;
                r.available = true;
                r.lastHeartbeatMs = now;
                if (reappear) {
                    view().replace(r.instance, r.pod, r.tiers());
                    view().setVisible(r.instance, r.pod, true);
                }
            }
            return null;
        }

        private Fail heartbeat() {
            long now = now();
            synchronized (r) {
                if (r.tombstoned) {
                    return new Fail(ErrorCode.NODE_NOT_REGISTERED, "reporter " + r.host + " was unregistered; send "
                            + "EVENT_NODE_REGISTER first");
                }
                seen(now);
                r.lastHeartbeatMs = now;
                if (!r.available) {
                    r.available = true;
                    view().setVisible(r.instance, r.pod, true);
                }
            }
            return null;
        }

        private Fail notRegistered() {
            return new Fail(ErrorCode.NODE_NOT_REGISTERED, "reporter " + r.host + " was unregistered (HOST_DOWN or "
                    + "heartbeat grace exceeded); send EVENT_NODE_REGISTER, then retry");
        }

        private Fail delta(int i, EventItem e) throws InterruptedException {
            Delta d;
            try {
                d = EngineReports.delta(e, registered);
            } catch (IllegalArgumentException bad) {
                return invalid(i, bad.getMessage());
            }
            synchronized (r) {
                if (r.tombstoned) {
                    return notRegistered();
                }
            }
            if (deltaRefused) {
                return new Fail(ErrorCode.SNAPSHOT_IN_PROGRESS, "a snapshot of this reporter held the write gate "
                        + "longer than snapshot_delta_drain_timeout_ms; retry");
            }
            if (!deltaAdmitted) {
                if (!r.gate.beginDelta(st.snapshotDeltaDrainTimeoutMs())) {
                    deltaRefused = true;
                    return delta(i, e);
                }
                deltaAdmitted = true;
            }
            long now = now();
            synchronized (r) {
                if (r.tombstoned || r.lifecycle != lifecycleSeen) { // unregistered or re-registered while waiting
                    return new Fail(ErrorCode.SNAPSHOT_REQUIRED, "reporter " + r.host + " was unregistered or "
                            + "registered again while this request waited; register and retry");
                }
                seen(now);
                if (r.generation == null) {
                    r.generation = Generations.next();
                }
                String token = r.generation;
                String tier = d.medium().toLowerCase(java.util.Locale.ROOT);
                if (d.add()) {
                    Map<String, Reporter.Spec> specs = new LinkedHashMap<>();
                    d.specs().forEach((name, uri) -> specs.put(name, Reporter.Spec.of(Uris.withVersion(uri, token))));
                    boolean fresh = r.location(d.key(), d.medium()) == null;
                    if (fresh && ir.locations.get() >= cap(inst)) {
                        return new Fail(ErrorCode.REACH_MAX_ENTITY_CAPACITY, "instance " + inst.id + " holds "
                                + ir.locations.get() + " reported locations, the bound");
                    }
                    if (r.put(d.key(), d.medium(), specs)) {
                        ir.locations.incrementAndGet();
                        view().store(r.instance, r.pod, tier, new long[] {d.key()});
                    }
                } else if (r.remove(d.key(), d.medium(), d.names())) {
                    ir.locations.decrementAndGet();
                    if (r.blocks.get(d.key()) == null || r.blocks.get(d.key()).keySet().stream()
                            .noneMatch(m -> m.toLowerCase(java.util.Locale.ROOT).equals(tier))) {
                        view().remove(r.instance, r.pod, tier, new long[] {d.key()});
                    }
                }
                dirty.add(Map.entry(d.key(), d.medium()));
                applied.add(i);
            }
            return null;
        }

        /** Writes the locations this request changed, with the newest state (see {@link Reporter#persist}). */
        private void flush() {
            if (dirty.isEmpty()) {
                return;
            }
            ReportRecords rec = records();
            try {
                synchronized (r.persist) {
                    for (var loc : dirty) {
                        Map<String, Reporter.Spec> specs;
                        synchronized (r) {
                            Map<String, Reporter.Spec> cur = r.location(loc.getKey(), loc.getValue());
                            specs = cur == null ? null : new LinkedHashMap<>(cur);
                        }
                        rec.put(r, loc.getKey(), loc.getValue(), specs);
                    }
                }
            } catch (RuntimeException e) {
                LOG.warnf(e, "ReportEvent: persisting %d locations of %s failed", dirty.size(), r.host);
                for (int i : applied) {
                    fails[i] = new Fail(ErrorCode.INTERNAL_ERROR, "persisting the change failed: " + e.getMessage());
                }
            }
        }

        private Fail snapshot(int i, BlockSnapshotEventParams s) throws InterruptedException {
            Map<Long, Map<String, Map<String, String>>> blocks;
            try {
                blocks = EngineReports.snapshot(s, registered);
            } catch (IllegalArgumentException bad) {
                return invalid(i, bad.getMessage());
            }
            long now = now();
            synchronized (r) {
                if (r.tombstoned) {
                    return notRegistered();
                }
                if (r.snapshotCommitted && now - r.lastSnapshotCommitMs < st.snapshotMinIntervalMs()) {
                    retryAfter = st.snapshotMinIntervalMs() - (now - r.lastSnapshotCommitMs);
                    return new Fail(ErrorCode.SNAPSHOT_RATE_LIMITED, "the last snapshot of this reporter committed "
                            + (now - r.lastSnapshotCommitMs) + " ms ago; snapshot_min_interval_ms is "
                            + st.snapshotMinIntervalMs());
                }
            }
            var entry = r.gate.beginSnapshot(st.snapshotDeltaDrainTimeoutMs());
            if (entry == ReporterGate.SnapshotEntry.BUSY) {
                return new Fail(ErrorCode.SNAPSHOT_IN_PROGRESS, "another snapshot of this reporter is running");
            }
            if (entry == ReporterGate.SnapshotEntry.DRAIN_TIMEOUT) {
                return new Fail(ErrorCode.SNAPSHOT_IN_PROGRESS, "deltas of this reporter did not drain within "
                        + "snapshot_delta_drain_timeout_ms; the snapshot was not applied, retry it whole");
            }
            try {
                long count = 0;
                for (var m : blocks.values()) {
                    count += m.size();
                }
                long others;
                synchronized (r) {
                    if (r.tombstoned || r.lifecycle != lifecycleSeen) {
                        return new Fail(ErrorCode.SNAPSHOT_REQUIRED, "reporter " + r.host + " was unregistered or "
                                + "registered again while the snapshot waited");
                    }
                    others = ir.locations.get() - r.locations;
                }
                if (others + count > cap(inst)) {
                    return new Fail(ErrorCode.REACH_MAX_ENTITY_CAPACITY, "the snapshot's " + count + " locations "
                            + "would take instance " + inst.id + " past its bound of " + cap(inst));
                }
                return commit(blocks, now);
            } finally {
                r.gate.endSnapshot();
            }
        }

        private Fail commit(Map<Long, Map<String, Map<String, String>>> blocks, long now) {
            String token = Generations.next();
            HashMap<Long, Map<String, Map<String, Reporter.Spec>>> next = new HashMap<>(Math.max(16, blocks.size() * 2));
            long count = 0;
            for (var b : blocks.entrySet()) {
                Map<String, Map<String, Reporter.Spec>> media = new HashMap<>(2);
                for (var m : b.getValue().entrySet()) {
                    Map<String, Reporter.Spec> specs = new LinkedHashMap<>();
                    m.getValue().forEach((name, uri) -> specs.put(name, Reporter.Spec.of(Uris.withVersion(uri, token))));
                    media.put(m.getKey(), specs);
                    count++;
                }
                next.put(b.getKey(), media);
            }
            ReportRecords rec = records();
            try {
                synchronized (r.persist) {
                    List<Map.Entry<Long, String>> old = new ArrayList<>();
                    synchronized (r) {
                        r.blocks.forEach((k, m) -> m.keySet().forEach(md -> {
                            Map<String, Map<String, Reporter.Spec>> nm = next.get(k);
                            if (nm == null || !nm.containsKey(md)) {
                                old.add(Map.entry(k, md));
                            }
                        }));
                    }
                    for (var b : next.entrySet()) {
                        for (var m : b.getValue().entrySet()) {
                            rec.put(r, b.getKey(), m.getKey(), m.getValue());
                        }
                    }
                    for (var o : old) {
                        rec.remove(r, o.getKey(), o.getValue());
                    }
                    synchronized (r) {
                        long before = r.locations;
                        r.blocks.clear();
                        r.blocks.putAll(next);
                        r.locations = count;
                        ir.locations.addAndGet(count - before);
                        r.generation = token;
                        r.strict = true;
                        seen(now);
                        r.lastSnapshotCommitMs = now;
                        r.snapshotCommitted = true;
                        view().replace(r.instance, r.pod, r.tiers());
                    }
                }
            } catch (RuntimeException e) {
                LOG.warnf(e, "ReportEvent: snapshot of %s (%d locations) failed", r.host, count);
                synchronized (r) {
                    r.strict = false; // a failed admitted snapshot: soft visibility until the next one commits
                }
                return new Fail(ErrorCode.INTERNAL_ERROR, "snapshot failed: " + e.getMessage() + "; retry it whole");
            }
            snapshotOk = true;
            return null;
        }

        private Fail hostDown() {
            synchronized (r) {
                tombstone(r);
            }
            return null;
        }
    }

    /** Unregisters (HOST_DOWN or grace exceeded): hidden at once, generation cleared, metadata left to the GC. */
    private void tombstone(Reporter r) {
        r.tombstoned = true;
        r.gcPending = true;
        r.generation = null;
        r.strict = false;
        r.available = false;
        view().clearPod(r.instance, r.pod);
    }

    // ---- liveness ------------------------------------------------------------------------------------------------

    /**
     * One liveness pass (§4.7): reporters silent past heartbeat_timeout_ms are hidden, past the cleanup grace
     * tombstoned; tombstoned reporters' metadata is removed. Each storage is looked at every
     * liveness_check_interval_ms; {@code force} ignores that (tests).
     */
    public void sweep(boolean force) {
        long now = now();
        Set<String> due = new HashSet<>();
        for (InstanceReports ir : instances.values()) {
            for (Reporter r : ir.reporters.values()) {
                EventReportStorage st;
                synchronized (r) {
                    st = r.storage;
                }
                if (st == null) {
                    continue;
                }
                if (!force) {
                    Long last = lastSweep.get(st.name());
                    if (last != null && now - last < st.livenessCheckIntervalMs() && !due.contains(st.name())) {
                        continue;
                    }
                    due.add(st.name());
                }
                boolean gc;
                synchronized (r) {
                    if (r.seen && !r.tombstoned) {
                        // the time now, not at the start of the pass: a long GC earlier in the pass must not judge a
                        // later reporter (and its heartbeat since) by a stale time
                        long silent = now() - r.lastHeartbeatMs;
                        if (silent > st.heartbeatTimeoutMs() + st.cleanupGraceMs()) {
                            tombstone(r);
                        } else if (silent > st.heartbeatTimeoutMs() && r.available) {
                            r.available = false;
                            view().setVisible(r.instance, r.pod, false);
                        }
                    }
                    gc = r.tombstoned && r.gcPending;
                }
                if (gc) {
                    collect(ir, r);
                }
            }
        }
        due.forEach(s -> lastSweep.put(s, now));
    }

    /** Removes a tombstoned reporter's metadata (fenced: a REGISTER since the tombstone keeps it). */
    private void collect(InstanceReports ir, Reporter r) {
        List<Map.Entry<Long, String>> locs = new ArrayList<>();
        long lifecycle;
        synchronized (r) {
            lifecycle = r.lifecycle;
            r.blocks.forEach((k, m) -> m.keySet().forEach(md -> locs.add(Map.entry(k, md))));
        }
        try {
            synchronized (r.persist) {
                ReportRecords rec = records();
                for (var l : locs) {
                    synchronized (r) {
                        if (!r.tombstoned || r.lifecycle != lifecycle) {
                            return;
                        }
                    }
                    rec.remove(r, l.getKey(), l.getValue());
                }
                synchronized (r) {
                    if (r.tombstoned && r.lifecycle == lifecycle) {
                        ir.locations.addAndGet(-r.locations);
                        r.clearBlocks();
                        r.gcPending = false;
                    }
                }
            }
        } catch (RuntimeException e) {
            LOG.warnf(e, "engine report GC of %s failed; retried next pass", r.host);
        }
    }

    void onStart(@jakarta.enterprise.event.Observes io.quarkus.runtime.StartupEvent ev) {
        startSweeper();
    }

    /** Starts the liveness sweep (once, at start-up). */
    public synchronized void startSweeper() {
        if (sweeper != null) {
            return;
        }
        long tick = Math.max(100, settings.sweepTick().toMillis());
        sweeper = java.util.concurrent.Executors.newSingleThreadScheduledExecutor(
                Thread.ofPlatform().daemon().name("kvpool-engine-report-liveness").factory());
        sweeper.scheduleWithFixedDelay(() -> {
            try {
                if (leader()) {
                    sweep(false);
                }
            } catch (RuntimeException e) {
                LOG.warn("engine report liveness sweep failed", e);
            }
        }, tick, tick, TimeUnit.MILLISECONDS);
    }

    @PreDestroy
    synchronized void stop() {
        if (sweeper != null) {
            sweeper.shutdownNow();
        }
    }

    /** The most p2p_host_count hosts that get a remote L2 peer evaluated. */
    public static final int MAX_P2P_HOSTS = 16;

    private static boolean holds(List<Reporter> rs, long key, Set<String> media, long now) {
        for (Reporter r : rs) {
            synchronized (r) {
                if (r.live(now) && r.holds(key, media)) {
                    return true;
                }
            }
        }
        return false;
    }

    /**
     * H3 P2P (§5.2): for the p2p_host_count hosts with the longest local match (ties: host order), one remote L2
     * peer (another host's live ST_EVENT_REPORT_L2 reporter) is evaluated: the one whose blocks extend the host's
     * contiguous prefix the furthest (ties: peer endpoint order). Answer per host: {p2p_1_fetch = keys of that
     * prefix the host lacks and the peer supplies, p2p_1_total_match = the prefix after the pull}.
     */
    private static Map<String, long[]> p2p(GetHostCacheStateRequest q, Map<String, List<Reporter>> hosts,
                                           Map<String, Long> locals, Map<String, List<Reporter>> byHost,
                                           Set<String> media, long now) {
        int want = Math.min(MAX_P2P_HOSTS, q.getP2PHostCount());
        Map<String, long[]> out = new HashMap<>();
        if (want <= 0 || hosts.isEmpty()) {
            return out;
        }
        TreeMap<String, List<Reporter>> peers = new TreeMap<>();
        byHost.forEach((h, rs) -> rs.stream().filter(r -> r.l2).forEach(r -> peers.computeIfAbsent(h,
                x -> new ArrayList<>()).add(r)));
        if (peers.isEmpty()) {
            return out;
        }
        List<String> order = new ArrayList<>(locals.keySet());
        order.sort((a, c) -> locals.get(a).equals(locals.get(c)) ? a.compareTo(c) : Long.compare(locals.get(c), locals.get(a)));
        int n = q.getBlockCacheKeysCount();
        for (String h : order.subList(0, Math.min(want, order.size()))) {
            long bestTotal = -1, bestFetch = 0;
            for (var p : peers.entrySet()) {
                if (p.getKey().equals(h)) {
                    continue;
                }
                long total = 0, fetch = 0;
                for (int i = 0; i < n; i++) {
                    long k = q.getBlockCacheKeys(i);
                    if (holds(hosts.get(h), k, media, now)) {
                        total++;
                    } else if (holds(p.getValue(), k, media, now)) {
                        total++;
                        fetch++;
                    } else {
                        break;
                    }
                }
                if (total > bestTotal) {
                    bestTotal = total;
                    bestFetch = fetch;
                }
            }
            if (bestTotal >= 0) {
                out.put(h, new long[] {bestFetch, bestTotal});
            }
        }
        return out;
    }

    // ---- GetHostCacheState --------------------------------------------------------------------------------------

    public GetHostCacheStateResponse getHostCacheState(GetHostCacheStateRequest q) {
        try {
            return hostCacheState(q);
        } catch (MetaException e) {
            return GetHostCacheStateResponse.newBuilder().setHeader(header(q.getTraceId(), KvcmCodes.code(e.kind()),
                    e.getMessage()))
                    .build();
        } catch (RuntimeException e) {
            LOG.errorf(e, "GetHostCacheState failed (trace %s)", Text.safe(q.getTraceId()));
            return GetHostCacheStateResponse.newBuilder().setHeader(header(q.getTraceId(), ErrorCode.INTERNAL_ERROR,
                    "GetHostCacheState failed: " + e)).build();
        }
    }

    /** The HTTP answer: as {@link #getHostCacheState}, with "global" (= local) per host when configured. */
    public byte[] getHostCacheStateJson(GetHostCacheStateRequest q) {
        GetHostCacheStateResponse r = getHostCacheState(q);
        if (!settings.emitGlobal()) {
            return ProtoJson.print(r);
        }
        StringBuilder b = new StringBuilder(64 + 96 * r.getHostsCount()).append("{\"header\":")
                .append(ProtoJson.printToString(r.getHeader())).append(",\"hosts\":[");
        for (int i = 0; i < r.getHostsCount(); i++) {
            String h = ProtoJson.printToString(r.getHosts(i));
            b.append(i == 0 ? "" : ",").append(h, 0, h.length() - 1).append(",\"global\":\"")
                    .append(r.getHosts(i).getLocal()).append("\"}");
        }
        return b.append("]}").toString().getBytes(StandardCharsets.UTF_8);
    }

    private GetHostCacheStateResponse hostCacheState(GetHostCacheStateRequest q) {
        gate(q.getTraceId());
        Instance inst = instance(q.getInstanceId());
        QueryType t = q.getQueryType();
        if (t == QueryType.QT_UNSPECIFIED) {
            t = inst.info.getDefaultQueryType() == QueryType.QT_UNSPECIFIED ? QueryType.QT_PREFIX_MATCH
                    : inst.info.getDefaultQueryType();
        }
        if (t != QueryType.QT_PREFIX_MATCH && t != QueryType.QT_PREFIX_MATCH_WITH_MAMBA) {
            throw MetaException.invalid("query_type " + t + " is not supported by GetHostCacheState (QT_PREFIX_MATCH, "
                    + "QT_PREFIX_MATCH_WITH_MAMBA)");
        }
        int n = q.getBlockCacheKeysCount();
        if (n == 0) {
            throw MetaException.invalid("block_cache_keys is empty");
        }
        if (n > MAX_QUERY_KEYS) {
            throw MetaException.invalid("block_cache_keys has " + n + " keys, at most " + MAX_QUERY_KEYS);
        }
        if (q.getMediumCount() > MAX_MEDIA) {
            throw MetaException.invalid("medium has more than " + MAX_MEDIA + " entries");
        }
        Set<String> media = new HashSet<>();
        for (String m : q.getMediumList()) {
            String p = mediumProblem("medium", m);
            if (p != null) {
                throw MetaException.invalid(p);
            }
            media.add(m);
        }
        if (q.getP2PHostCount() < 0) {
            throw MetaException.invalid("p2p_host_count must be >= 0");
        }
        long now = now();
        InstanceReports ir = state(inst.id);
        long first = q.getBlockCacheKeys(0);
        // candidates: hosts with a live reporter holding the first key; a host's reporters (L1P5 and L2) count together
        Map<String, List<Reporter>> byHost = new HashMap<>();
        Set<String> candidates = new HashSet<>();
        for (Reporter r : ir.reporters.values()) {
            synchronized (r) {
                if (r.live(now)) {
                    byHost.computeIfAbsent(r.host, h -> new ArrayList<>(2)).add(r);
                    if (r.holds(first, media)) {
                        candidates.add(r.host);
                    }
                }
            }
        }
        Map<String, List<Reporter>> hosts = new TreeMap<>();
        candidates.forEach(h -> hosts.put(h, byHost.get(h)));
        boolean eagle = inst.info.getModelDeployment().getUseEaglePop();
        Map<String, Long> locals = new LinkedHashMap<>();
        for (var h : hosts.entrySet()) {
            long local = 0;
            for (int i = 0; i < n && holds(h.getValue(), q.getBlockCacheKeys(i), media, now); i++) {
                local++;
            }
            locals.put(h.getKey(), local);
        }
        Map<String, long[]> p2p = p2p(q, hosts, locals, byHost, media, now);
        GetHostCacheStateResponse.Builder b = GetHostCacheStateResponse.newBuilder()
                .setHeader(header(q.getTraceId(), ErrorCode.OK, ""));
        for (var h : locals.entrySet()) {
            long local = eagle ? Math.max(0, h.getValue() - 1) : h.getValue();
            if (local > 0) {
                HostCacheMatch.Builder m = HostCacheMatch.newBuilder().setHostIpPort(h.getKey()).setLocal(local);
                long[] peer = p2p.get(h.getKey());
                if (peer != null) {
                    m.setP2P1Fetch(peer[0]).setP2P1TotalMatch(eagle ? Math.max(0, peer[1] - 1) : peer[1]);
                }
                b.addHosts(m);
            }
        }
        return b.build();
    }
}
