package dev.kvpool.agent.tier;

import dev.kvpool.api.client.KvcmHttpClient;
import dev.kvpool.api.client.KvcmHttpException;
import dev.kvpool.api.logging.FailureLog;
import dev.kvpool.api.time.Monotonic;
import dev.kvpool.api.events.BlockBatch;
import dev.kvpool.api.proto.meta.BlockMask;
import dev.kvpool.api.proto.meta.BoolMasksType;
import dev.kvpool.api.proto.meta.CacheLocation;
import dev.kvpool.api.proto.meta.ErrorCode;
import dev.kvpool.api.proto.meta.FinishWriteCacheRequest;
import dev.kvpool.api.proto.meta.GetCacheLocationRequest;
import dev.kvpool.api.proto.meta.GetCacheLocationResponse;
import dev.kvpool.api.proto.meta.LocationSpecInfo;
import dev.kvpool.api.proto.meta.ModelDeployment;
import dev.kvpool.api.proto.meta.QueryType;
import dev.kvpool.api.proto.meta.RegisterInstanceRequest;
import dev.kvpool.api.proto.meta.RegisterInstanceResponse;
import dev.kvpool.api.proto.meta.RemoveCacheRequest;
import dev.kvpool.api.proto.meta.StartWriteCacheRequest;
import dev.kvpool.api.proto.meta.StartWriteCacheResponse;
import dev.kvpool.api.naming.Identifiers;
import dev.kvpool.api.naming.Text;
import dev.kvpool.api.storage.SlabFiles;
import dev.kvpool.api.storage.StoragePaths;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.logging.Logger;

/**
 * G4: the global pool through the metadata plane's two-phase write. {@code startWriteCache} hands out
 * {@code file://<storage><path>/slab_<n>?blkid=<slot>&size=<bytes>} locations for the keys it does not have yet;
 * the agent writes each block at {@code blkid × size} in that slab file, writes its CRC32C beside it (a sidecar
 * {@code <slab>.crc}, 8 bytes per slot: magic + CRC of the key and the bytes), forces both to disk, and finishes with
 * the TRUE success mask: a location whose write failed (even midway) is reported false, so the metadata plane never
 * serves it. Loads ask {@code getCacheLocation} (BATCH_GET), read the slot and check the CRC against the key they
 * asked for; a mismatch is a miss. Blocks not yet written when the session nears its deadline are not written at
 * all: past it the plane may hand their slots to another writer.
 */
public final class GlobalPoolTier implements Tier {
    private static final Logger LOG = Logger.getLogger(GlobalPoolTier.class.getName());
    static final int CRC_MAGIC = 0x4B564333; // "KVC3": CRC32C of key + bytes
    static final int CRC_MAGIC_UNKEYED = 0x4B564332; // "KVC2": bytes only, written by agents before KVC3

    /** A hook to fail a block's write after part of it reached the file (tests of partial writes). */
    public interface FaultInjector {
        boolean failMidway(long key);
    }

    /**
     * A parsed {@code file://} location: the path of the slab file and the slot in it. Parsed strictly, as text from a
     * peer: {@code blkid} and {@code size} are plain non-negative decimals, each given once, {@code size} required,
     * and the slot's byte range and its checksum record's offset fit a long. Where the path may lie is not decided
     * here ({@link GlobalPoolTier#confine}: inside a storage root and the agent's own instance directory).
     */
    public record FileLocation(Path path, long blkid, long size) {
        public FileLocation {
            if (blkid < 0 || size < 0) {
                throw new IllegalArgumentException("blkid and size must not be negative: blkid=" + blkid + " size=" + size);
            }
            try {
                Math.addExact(Math.multiplyExact(blkid, size), size); // the slot's end
                Math.multiplyExact(blkid, 8); // its checksum record
            } catch (ArithmeticException e) {
                throw new IllegalArgumentException("slot " + blkid + " of " + size + " bytes lies beyond any file");
            }
        }

        /** The slot's first byte (blkid × size, proven to fit a long). */
        public long offset() {
            return blkid * size;
        }

        public static FileLocation parse(String uri) {
            if (uri == null || !uri.startsWith("file://")) {
                throw new IllegalArgumentException("not a file location: " + Text.safe(uri));
            }
            String rest = uri.substring("file://".length());
            int slash = rest.indexOf('/');
            int q = rest.indexOf('?');
            if (slash < 0 || q >= 0 && q < slash) {
                throw new IllegalArgumentException("file location without a path: " + Text.safe(uri));
            }
            String path = q < 0 ? rest.substring(slash) : rest.substring(slash, q);
            long blkid = -1, size = -1;
            if (q >= 0) {
                for (String kv : rest.substring(q + 1).split("&", -1)) {
                    int eq = kv.indexOf('=');
                    String k = eq < 0 ? kv : kv.substring(0, eq);
                    if (!k.equals("blkid") && !k.equals("size")) {
                        continue; // parameters of other writers' conventions: not ours to judge
                    }
                    long v = eq < 0 ? -1 : decimal(kv.substring(eq + 1));
                    if (v < 0) {
                        throw new IllegalArgumentException(k + " must be a non-negative decimal that fits a long: "
                                + Text.safe(uri));
                    }
                    if ((k.equals("blkid") ? blkid : size) >= 0) {
                        throw new IllegalArgumentException(k + " given twice: " + Text.safe(uri));
                    }
                    if (k.equals("blkid")) {
                        blkid = v;
                    } else {
                        size = v;
                    }
                }
            }
            if (size < 0) {
                throw new IllegalArgumentException("file location without size: " + Text.safe(uri));
            }
            Path p;
            try {
                p = Path.of(path);
            } catch (java.nio.file.InvalidPathException e) { // a NUL, say
                throw new IllegalArgumentException("file location with an invalid path: " + Text.safe(uri));
            }
            return new FileLocation(p, Math.max(0, blkid), size); // no blkid: one block per file, at 0
        }

        /** Digits only (no sign, no blank), at most what a long holds; else -1. */
        private static long decimal(String v) {
            if (v.isEmpty() || v.length() > 19) {
                return -1;
            }
            for (int i = 0; i < v.length(); i++) {
                if (v.charAt(i) < '0' || v.charAt(i) > '9') {
                    return -1;
                }
            }
            try {
                return Long.parseLong(v);
            } catch (NumberFormatException e) {
                return -1;
            }
        }
    }

    /** A location refused: outside the storage roots or the instance's directory, or not a slot of this tier. */
    static final class RefusedLocation extends Exception {
        RefusedLocation(String message) {
            super(message, null, false, false);
        }
    }

    private final KvcmHttpClient meta;
    private final String instanceId;
    private final String instanceGroup;
    private final int blockTokens;
    private final int blockBytes;
    private final String spec;
    private final int writeTimeoutSeconds;
    private final boolean requireChecksum;
    /** Where slab files may be: every path the metadata plane names is proven to lie in one of these. */
    private final List<Path> storageRoots;
    private final ExecutorService io;
    private volatile FaultInjector faults = k -> false;
    private final java.time.InstantSource clock;
    private final AtomicLong checksumFailures = new AtomicLong(), writeFailures = new AtomicLong(),
            lateSkips = new AtomicLong(), refusedLocations = new AtomicLong();

    /**
     * @param storageRoots the roots of the file storages this agent may read and write (absolute or relative to
     *                     the working directory): a location outside them, or outside {@code <root>/<instanceId>/},
     *                     is refused, never followed
     */
    public GlobalPoolTier(KvcmHttpClient meta, String instanceId, String instanceGroup, int blockTokens,
                          int blockBytes, String spec, int writeTimeoutSeconds, boolean requireChecksum, int threads,
                          List<Path> storageRoots) {
        this(meta, instanceId, instanceGroup, blockTokens, blockBytes, spec, writeTimeoutSeconds, requireChecksum,
                threads, storageRoots, Monotonic.SOURCE);
    }

    /**
     * @param clock what the agent's side of a write session's deadline and its log intervals are measured on
     *              (tests: a clock they move; the plane keeps its own deadline on its own clock)
     */
    public GlobalPoolTier(KvcmHttpClient meta, String instanceId, String instanceGroup, int blockTokens,
                          int blockBytes, String spec, int writeTimeoutSeconds, boolean requireChecksum, int threads,
                          List<Path> storageRoots, java.time.InstantSource clock) {
        // this tier builds paths and requests from these: checked here too, whoever constructs it
        Identifiers.require(Identifiers.Kind.INSTANCE, "instance id", instanceId);
        Identifiers.require(Identifiers.Kind.GROUP, "instance group", instanceGroup);
        Identifiers.require(Identifiers.Kind.SPEC, "location spec name", spec);
        if (storageRoots == null || storageRoots.isEmpty()) {
            throw new IllegalArgumentException("the global pool needs the storage root(s) its slab files may be in");
        }
        this.storageRoots = storageRoots.stream().map(r -> r.toAbsolutePath().normalize()).toList();
        this.meta = meta;
        this.instanceId = instanceId;
        this.instanceGroup = instanceGroup;
        this.blockTokens = blockTokens;
        this.blockBytes = blockBytes;
        this.spec = spec;
        this.writeTimeoutSeconds = writeTimeoutSeconds;
        this.requireChecksum = requireChecksum;
        this.clock = clock;
        this.reach = new FailureLog(org.jboss.logging.Logger.getLogger(GlobalPoolTier.class),
                "global pool: metadata plane " + meta.baseUri(), java.time.Duration.ofSeconds(30),
                GlobalPoolTier::outOfReach, clock);
        this.io = Executors.newFixedThreadPool(Math.max(1, threads), r -> {
            Thread t = new Thread(r, "kvpool-pool-io");
            t.setDaemon(true);
            return t;
        });
    }

    /**
     * Whether a failed call means the metadata plane is out of reach (connection refused or reset, timeout, 5xx or
     * 429 while it restarts), so the same call may work later; a 4xx other than 429 would fail again.
     */
    public static boolean outOfReach(Throwable e) {
        while (e instanceof java.util.concurrent.CompletionException && e.getCause() != null) {
            e = e.getCause();
        }
        return e instanceof java.io.UncheckedIOException
                || e instanceof KvcmHttpException h && (h.statusCode() >= 500 || h.statusCode() == 429);
    }

    /** The metadata plane out of reach: one line when it starts, one per 30 s, one when it is back. */
    private final FailureLog reach;

    /** A call to the metadata plane; its failures (plane down, timeouts, HTTP errors) go to {@link #reach}. */
    private <T> T plane(java.util.function.Supplier<T> call) {
        T r;
        try {
            r = call.get();
        } catch (RuntimeException e) {
            reach.failed(e);
            throw e;
        }
        reach.ok();
        return r;
    }

    private volatile String model;
    private volatile boolean registered;

    /** Registers the agent's instance (idempotent for the same configuration); retried on use if it failed. */
    public void register(String modelName) {
        this.model = modelName;
        RegisterInstanceResponse r = plane(() -> meta.registerInstance(RegisterInstanceRequest.newBuilder().setTraceId("agent-register")
                .setInstanceGroup(instanceGroup).setInstanceId(instanceId).setBlockSize(blockTokens)
                .addLocationSpecInfos(LocationSpecInfo.newBuilder().setName(spec).setSize(blockBytes))
                .setModelDeployment(ModelDeployment.newBuilder().setModelName(modelName).setDtype("bytes")).build()));
        ErrorCode c = r.getHeader().getStatus().getCode();
        if (c != ErrorCode.OK && c != ErrorCode.DUPLICATE_ENTITY) {
            throw new IllegalStateException("registerInstance " + instanceId + " failed: " + r.getHeader().getStatus());
        }
        registered = true;
    }

    private void ensureRegistered() {
        if (!registered && model != null) {
            register(model);
        }
    }

    public void faults(FaultInjector f) {
        this.faults = f;
    }

    public long checksumFailures() {
        return checksumFailures.get();
    }

    public long writeFailures() {
        return writeFailures.get();
    }

    /** Blocks left unwritten (reported failed) because their session was about to reach its deadline. */
    public long lateSkips() {
        return lateSkips.get();
    }

    @Override
    public String name() {
        return "pool";
    }

    @Override
    public String medium() {
        return BlockBatch.BlockEvent.REMOTE;
    }

    @Override
    public int blockBytes() {
        return blockBytes;
    }

    @Override
    public boolean contains(long key) {
        return present(new long[] {key})[0];
    }

    /** BATCH_GET: which keys the metadata plane serves (at a location this agent would read). */
    public boolean[] present(long[] keys) {
        List<CacheLocation> locs = locate(keys);
        boolean[] out = new boolean[keys.length];
        for (int i = 0; i < out.length; i++) {
            String u = i < locs.size() ? uri(locs.get(i)) : null; // a short answer: the rest are misses
            out[i] = u != null && confinedOrNull(u) != null;
        }
        return out;
    }

    private List<CacheLocation> locate(long[] keys) {
        ensureRegistered();
        GetCacheLocationRequest.Builder b = GetCacheLocationRequest.newBuilder().setTraceId("agent-get")
                .setInstanceId(instanceId).setQueryType(QueryType.QT_BATCH_GET);
        for (long k : keys) {
            b.addBlockKeys(k);
        }
        GetCacheLocationResponse r = plane(() -> meta.getCacheLocation(b.build()));
        if (r.getHeader().getStatus().getCode() != ErrorCode.OK) {
            throw new IllegalStateException("getCacheLocation failed: " + r.getHeader().getStatus());
        }
        return r.getLocationsList();
    }

    private String uri(CacheLocation l) {
        for (var s : l.getLocationSpecsList()) {
            if (s.getName().equals(spec) && !s.getUri().isEmpty()) {
                return s.getUri();
            }
        }
        return null;
    }

    private final InFlightPuts inFlight = new InFlightPuts();

    @Override
    public CompletableFuture<boolean[]> put(long[] keys, MemorySegment[] src, boolean deferred) {
        return putOutcome(keys, src).thenApply(Outcome::stored);
    }

    /**
     * What a put did per block: stored, or left out because its session neared its deadline before the block's
     * write began ({@code late}: the plane was slow, not the block bad; another session may well take it).
     */
    public record Outcome(boolean[] stored, boolean[] late) {
        static Outcome none(int n) {
            return new Outcome(new boolean[n], new boolean[n]);
        }
    }

    /** {@link #put}, telling which blocks were left out late. */
    public CompletableFuture<Outcome> putOutcome(long[] keys, MemorySegment[] src) {
        long stamp = inFlight.begin(keys);
        return CompletableFuture.supplyAsync(() -> {
            Outcome o = Outcome.none(keys.length);
            try {
                o = putNow(keys, src);
            } finally {
                undoRemoved(keys, o, stamp);
            }
            return o;
        }, io);
    }

    /**
     * A put ended: blocks the engine removed while it was queued or running are removed from the pool again (a
     * removeCache that came before this put's startWriteCache found nothing to remove) and reported not stored.
     */
    private void undoRemoved(long[] keys, Outcome o, long stamp) {
        boolean[] ok = o.stored();
        List<Long> undo = new ArrayList<>();
        for (int i = 0; i < keys.length; i++) {
            if (inFlight.end(keys[i], stamp)) {
                o.late()[i] = false; // removed: not worth another try either
                if (ok[i]) {
                    undo.add(keys[i]);
                    ok[i] = false;
                }
            }
        }
        if (!undo.isEmpty()) {
            RemoveCacheRequest.Builder r = RemoveCacheRequest.newBuilder().setTraceId("agent-remove")
                    .setInstanceId(instanceId);
            undo.forEach(r::addBlockKeys);
            try {
                plane(() -> meta.removeCache(r.build()));
            } catch (RuntimeException e) {
                LOG.warning("removeCache of " + undo.size() + " blocks removed while being written failed: " + e);
            }
        }
    }

    Outcome putNow(long[] keys, MemorySegment[] src) {
        ensureRegistered();
        // the session's deadline counts from the plane's start, after this; a tenth (at least 1 s, or half of a
        // shorter session) kept in hand for the writes in progress and the forces. A timeout ≤ 0 gets the plane's
        // default, KVCM's 30 s unless configured otherwise
        long budgetNs = TimeUnit.SECONDS.toNanos(writeTimeoutSeconds > 0 ? writeTimeoutSeconds : 30);
        long stopWritingAt = Monotonic.nanos(clock) + budgetNs
                - Math.max(budgetNs / 10, Math.min(TimeUnit.SECONDS.toNanos(1), budgetNs / 2));
        StartWriteCacheRequest.Builder sb = StartWriteCacheRequest.newBuilder().setTraceId("agent-put")
                .setInstanceId(instanceId).setWriteTimeoutSeconds(writeTimeoutSeconds);
        for (long k : keys) {
            sb.addBlockKeys(k);
        }
        StartWriteCacheResponse started = plane(() -> meta.startWriteCache(sb.build()));
        if (started.getHeader().getStatus().getCode() == ErrorCode.INSTANCE_NOT_EXIST && model != null) {
            // the plane lost its registry (a store wiped or replaced): register again rather than fail every write
            LOG.warning("global pool: instance " + instanceId + " unknown to the metadata plane; registering it again");
            registered = false;
            ensureRegistered();
            started = plane(() -> meta.startWriteCache(sb.build()));
        }
        StartWriteCacheResponse s = started;
        if (s.getHeader().getStatus().getCode() != ErrorCode.OK) {
            LOG.warning("startWriteCache failed: " + s.getHeader().getStatus());
            return Outcome.none(keys.length);
        }
        boolean[] ok = new boolean[keys.length];
        BlockMask m = s.getBlockMask();
        List<Integer> fresh = new ArrayList<>();
        for (int i = 0; i < keys.length; i++) {
            boolean exists = m.hasBoolMasks() ? i < m.getBoolMasks().getValuesCount() && m.getBoolMasks().getValues(i)
                    : m.hasOffset() && i < m.getOffset();
            if (exists) {
                ok[i] = true;
            } else {
                fresh.add(i);
            }
        }
        List<CacheLocation> locs = s.getLocationsList();
        boolean[] success = new boolean[locs.size()];
        boolean[] late = new boolean[keys.length];
        Path[] written = new Path[locs.size()];
        Map<Path, Boolean> touched = new HashMap<>();
        // channels live for one operation only: the metadata plane deletes a slab file when its last block goes,
        // and a later slab of the same name is a new file
        Map<Path, FileChannel> open = new HashMap<>();
        try {
        for (int j = 0; j < locs.size() && j < fresh.size(); j++) {
            int i = fresh.get(j);
            try {
                String u = uri(locs.get(j));
                if (u == null || src[i].byteSize() != blockBytes) {
                    continue;
                }
                FileLocation fl = confinedOrNull(u);
                if (fl == null) {
                    continue; // refused: reported failed, counted and logged
                }
                if (Monotonic.nanos(clock) - stopWritingAt > 0) {
                    lateSkips.incrementAndGet();
                    late[i] = true;
                    continue;
                }
                written[j] = fl.path();
                writeBlock(open, keys[i], fl, src[i]);
                touched.put(fl.path(), true);
                success[j] = true;
            } catch (IOException | RuntimeException e) {
                writeFailures.incrementAndGet();
                LOG.warning("write of block " + keys[i] + " to the pool failed: " + e);
            }
        }
        for (Path p : touched.keySet()) { // the bytes and their CRCs reach the disk before the finish
            try {
                channel(open, p).force(false);
                channel(open, crcPath(p)).force(false);
            } catch (IOException e) {
                for (int j = 0; j < written.length; j++) {
                    if (p.equals(written[j])) {
                        success[j] = false;
                    }
                }
            }
        }
        } finally {
            open.values().forEach(GlobalPoolTier::closeQuietly);
        }
        BoolMasksType.Builder mask = BoolMasksType.newBuilder();
        for (boolean b : success) {
            mask.addValues(b);
        }
        var f = plane(() -> meta.finishWriteCache(FinishWriteCacheRequest.newBuilder().setTraceId("agent-finish")
                .setInstanceId(instanceId).setWriteSessionId(s.getWriteSessionId())
                .setSuccessBlocks(BlockMask.newBuilder().setBoolMasks(mask)).build()));
        if (f.getHeader().getStatus().getCode() != ErrorCode.OK) {
            LOG.warning("finishWriteCache failed: " + f.getHeader().getStatus());
            return Outcome.none(keys.length);
        }
        for (int j = 0; j < success.length && j < fresh.size(); j++) {
            ok[fresh.get(j)] = success[j];
        }
        return new Outcome(ok, late);
    }

    private void writeBlock(Map<Path, FileChannel> open, long key, FileLocation fl, MemorySegment src)
            throws IOException {
        FileChannel ch = channel(open, fl.path());
        ByteBuffer bb = src.asByteBuffer();
        if (faults.failMidway(key)) {
            bb.limit(bb.capacity() / 2);
            writeFully(ch, bb, fl.offset());
            throw new IOException("injected failure after " + bb.capacity() / 2 + " bytes of block " + key);
        }
        writeFully(ch, bb, fl.offset());
        ByteBuffer crc = ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putInt(CRC_MAGIC)
                .putInt(Checksums.crc32c(key, src)).flip();
        writeFully(channel(open, crcPath(fl.path())), crc, fl.blkid() * 8);
    }

    private static void writeFully(FileChannel ch, ByteBuffer bb, long pos) throws IOException {
        while (bb.hasRemaining()) {
            pos += ch.write(bb, pos);
        }
    }

    static Path crcPath(Path slab) {
        return dev.kvpool.api.storage.SlabFiles.checksums(slab);
    }

    private static FileChannel channel(Map<Path, FileChannel> open, Path p) throws IOException {
        FileChannel ch = open.get(p);
        if (ch == null) {
            Files.createDirectories(p.getParent());
            // a symbolic link planted where a slab belongs would lead out of the instance's directory: not followed
            ch = FileChannel.open(p, StandardOpenOption.CREATE, StandardOpenOption.READ, StandardOpenOption.WRITE,
                    LinkOption.NOFOLLOW_LINKS);
            open.put(p, ch);
        }
        return ch;
    }

    private static FileChannel reader(Map<Path, FileChannel> open, Path p) throws IOException {
        FileChannel ch = open.get(p);
        if (ch == null) {
            ch = FileChannel.open(p, StandardOpenOption.READ, LinkOption.NOFOLLOW_LINKS);
            open.put(p, ch);
        }
        return ch;
    }

    @Override
    public CompletableFuture<boolean[]> get(long[] keys, MemorySegment[] dst) {
        return CompletableFuture.supplyAsync(() -> getNow(keys, dst), io);
    }

    boolean[] getNow(long[] keys, MemorySegment[] dst) {
        List<CacheLocation> locs = locate(keys);
        boolean[] hit = new boolean[keys.length];
        Map<Path, FileChannel> open = new HashMap<>();
        try {
        for (int i = 0; i < keys.length; i++) {
            String u = i < locs.size() ? uri(locs.get(i)) : null;
            if (u == null || dst[i].byteSize() < blockBytes) {
                continue;
            }
            FileLocation fl = confinedOrNull(u);
            if (fl == null) {
                continue; // refused: a miss, counted and logged
            }
            try {
                MemorySegment d = dst[i].asSlice(0, blockBytes);
                ByteBuffer bb = d.asByteBuffer();
                FileChannel ch = reader(open, fl.path());
                long pos = fl.offset();
                while (bb.hasRemaining()) {
                    int n = ch.read(bb, pos);
                    if (n < 0) {
                        break;
                    }
                    pos += n;
                }
                if (bb.hasRemaining()) {
                    continue;
                }
                hit[i] = verify(open, keys[i], fl, d);
            } catch (NoSuchFileException e) {
                // slab removed since the lookup: a miss
            } catch (IOException | RuntimeException e) {
                LOG.fine("pool read of " + keys[i] + " failed: " + e);
            }
        }
        } finally {
            open.values().forEach(GlobalPoolTier::closeQuietly);
        }
        return hit;
    }

    private boolean verify(Map<Path, FileChannel> open, long key, FileLocation fl, MemorySegment block)
            throws IOException {
        ByteBuffer crc = ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN);
        Path cp = crcPath(fl.path());
        if (!Files.exists(cp, LinkOption.NOFOLLOW_LINKS)) {
            return !requireChecksum;
        }
        reader(open, cp).read(crc, fl.blkid() * 8);
        crc.flip();
        int magic = crc.remaining() < 8 ? 0 : crc.getInt();
        if (magic != CRC_MAGIC && magic != CRC_MAGIC_UNKEYED) {
            return !requireChecksum;
        }
        if (crc.getInt() != (magic == CRC_MAGIC ? Checksums.crc32c(key, block) : Checksums.crc32c(block))) {
            checksumFailures.incrementAndGet();
            return false;
        }
        return true;
    }

    /**
     * The location {@code uri} names, proven to be a slot of this tier: a slab file {@code <root>/<instance>/<spec>/
     * <file>} under one of the storage roots, in this agent's own instance directory and spec, not a checksum-record
     * file, and a slot of this tier's block size. The metadata plane is a peer: a plane that is compromised or
     * confused (or an instance id such as {@code ../x} registered before ids were checked) must not lead the agent to
     * read, write or create a file anywhere else, least of all another tenant's.
     */
    FileLocation confine(String uri) throws RefusedLocation {
        FileLocation fl;
        try {
            fl = FileLocation.parse(uri);
        } catch (IllegalArgumentException e) {
            throw new RefusedLocation(e.getMessage());
        }
        if (fl.size() != blockBytes) {
            throw new RefusedLocation("size " + fl.size() + " is not this tier's block size " + blockBytes);
        }
        String path = fl.path().toString();
        String why = "not under the storage root" + (storageRoots.size() > 1 ? "s " : " ") + storageRoots
                + " (kvpool.agent.pool.storage-roots)";
        for (Path root : storageRoots) {
            if (!fl.path().startsWith(root)) {
                continue;
            }
            Path p;
            try {
                p = StoragePaths.locate(root, path, instanceId);
            } catch (IllegalArgumentException e) { // StoragePaths.EscapeException or a name breaking the rules
                why = e.getMessage();
                continue; // nested roots: another may hold it
            }
            Path rel = root.relativize(p);
            if (!rel.getName(1).toString().equals(spec)) {
                throw new RefusedLocation("it is in spec directory '" + Text.safe(rel.getName(1).toString())
                        + "', not this tier's '" + spec + "'");
            }
            if (p.getFileName().toString().endsWith(SlabFiles.SUFFIX)) {
                throw new RefusedLocation("it names a checksum-record file, not a slab");
            }
            return new FileLocation(p, fl.blkid(), fl.size());
        }
        throw new RefusedLocation(why);
    }

    /** {@link #confine}, or null for a refused location (counted in {@link #refusedLocations}, logged). */
    private FileLocation confinedOrNull(String uri) {
        try {
            return confine(uri);
        } catch (RefusedLocation e) {
            refused(uri, e.getMessage());
            return null;
        }
    }

    private final Object refusalLog = new Object();
    private long refusalLoggedAt, refusalsUnlogged;

    /** One line for the first refusal, then at most one per 30 s with the count since: a hostile plane cannot flood the log. */
    private void refused(String uri, String why) {
        refusedLocations.incrementAndGet();
        long now = Monotonic.nanos(clock);
        synchronized (refusalLog) {
            if (refusalLoggedAt != 0 && now - refusalLoggedAt < TimeUnit.SECONDS.toNanos(30)) {
                refusalsUnlogged++;
                return;
            }
            LOG.warning("global pool: refused location " + Text.safe(uri) + " from the metadata plane "
                    + meta.baseUri() + " for instance " + instanceId + ": " + why
                    + "; a write there counts as failed, a read as a miss"
                    + (refusalsUnlogged > 0 ? " (" + refusalsUnlogged + " more refused since the last report)" : ""));
            refusalLoggedAt = now;
            refusalsUnlogged = 0;
        }
    }

    /** Locations of the metadata plane refused (outside the storage roots or this instance's directory, bad slot). */
    public long refusedLocations() {
        return refusedLocations.get();
    }

    @Override
    public boolean remove(long key) {
        boolean onItsWay = inFlight.removed(key); // a write-behind still on its way must not bring it back
        var r = plane(() -> meta.removeCache(RemoveCacheRequest.newBuilder().setTraceId("agent-remove").setInstanceId(instanceId)
                .addBlockKeys(key).build()));
        return r.getHeader().getStatus().getCode() == ErrorCode.OK || onItsWay;
    }

    @Override
    public long size() {
        return -1; // the metadata plane knows; not tracked here
    }

    @Override
    public void close() {
        io.shutdownNow();
    }

    private static void closeQuietly(FileChannel ch) {
        try {
            ch.close();
        } catch (IOException ignored) {
            // read/write channel we opened
        }
    }
}
