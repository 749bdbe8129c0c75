package dev.kvpool.agent.pool;

import dev.kvpool.agent.sched.DeviceWorker;
import dev.kvpool.agent.tier.Checksums;
import dev.kvpool.agent.tier.Tier;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;

/**
 * A tier made of several devices (memory regions, disks, GPUs) pooled as one: each block goes to one device, chosen
 * in proportion to the devices' measured bandwidth ({@link Placement}); each device has one {@link DeviceWorker};
 * a load is grouped by device and the groups run in parallel. The index (key → device, slot, CRC32C) lives here;
 * an entry is added only after its write completed in full, so a failed write is never visible. When the tier is
 * full the least recently used block that no one is reading or flushing is evicted. Where a device keeps a
 * {@link SlotTable}, every block stored or dropped is recorded in it (recency only at a clean close), and the
 * blocks it recorded are back in the index at start-up (least recently used first), their slots taken.
 */
public final class PooledTier implements Tier {
    /** Kept blocks of one device, in the order their {@code stored} events go out (see {@link #keptInPrefixOrder}). */
    public record KeptRun(String device, long[] keys, Long[] parents) {
    }

    /** A block pinned by {@link #pinMemory}: its tier-wide slot and CRC32C. */
    record Pin(int slot, int crc) {
    }

    /** Checksum verification of loads, off the device workers. */
    private static final java.util.concurrent.ExecutorService VERIFY = java.util.concurrent.Executors.newFixedThreadPool(
            Math.max(2, Runtime.getRuntime().availableProcessors()), r -> {
                Thread t = new Thread(r, "kvpool-verify");
                t.setDaemon(true);
                return t;
            });

    /** Size of the parts a big batch is cut into per device (see {@link #pipelined}). */
    static final long PIPELINE_BYTES = 32L << 20;

    private final String name;
    private final String medium;
    private final int blockBytes;
    private final Layout layout;
    /** A CRC32C per layer is kept and checked (the layered layout of more than one layer). */
    private final boolean perLayer;
    private final int layerBytes;
    /**
     * Per device, where {@link #perLayer}: each slot's layers' CRC32C (int at (slot * layers + layer) * 4), in the
     * device's slot table (mapped: no heap, and kept across restarts) or off-heap for devices without one.
     */
    private final MemorySegment[] layerCrcs;
    private final java.lang.foreign.Arena crcArena = java.lang.foreign.Arena.ofShared();
    private final List<Device> devices;
    private final List<DeviceWorker> workers;
    private final SlotAllocator[] slots;
    /** Per device its slot table, or null. */
    private final SlotTable[] tables;
    /** Recency stamp for slot tables (guarded by this). */
    private long stamp;
    /** Blocks each device kept from before a restart, by device id: a count, the keys go with the kept order. */
    private final Map<String, Integer> keptAtStart = new LinkedHashMap<>();
    /** The kept blocks for the restart's stored events, until taken (guarded by this). */
    private KeptOrder keptOrder;
    private final dev.kvpool.agent.tier.InFlightPuts inFlight = new dev.kvpool.agent.tier.InFlightPuts();
    private final Placement placement;
    private final double[] bandwidth;
    /** Blocks by tier-wide slot number: device d's slot s is {@code base[d] + s}. */
    private final SlotIndex index;
    private final int[] base;
    /** Per tier-wide slot: readers and write-behinds using it; dead = out of the index, released by the last pin. */
    private final int[] pins;
    private final boolean[] dead;
    /**
     * Per tier-wide slot: bytes that reached it without passing a CPU ({@link #putVia}: NVMe → GPU through cuFile),
     * so the CRC they were stored with was never checked against them. Their first load verifies them whatever
     * {@link #verifyLoads} says; after that they are as trusted as any other block of the tier.
     */
    private final boolean[] unchecked;
    private final AtomicLong checksumFailures = new AtomicLong(), evictions = new AtomicLong(),
            ioFailures = new AtomicLong();
    private volatile Consumer<long[]> evictListener = k -> { };

    /** Consecutive failed ops after which a device is taken out of use: a bad sector alone is not enough. */
    static final int FAIL_AFTER = 16;
    private static final org.jboss.logging.Logger LOG = org.jboss.logging.Logger.getLogger(PooledTier.class);
    /** Failed ops in a row per device: reset without the lock on a good read, so loads take no extra lock. */
    private final java.util.concurrent.atomic.AtomicIntegerArray failStreak;
    /** Epoch ms a device was taken out of use, or of its last failed probe; 0 while in use (guarded by this). */
    private final long[] failedAtMs;
    private final java.util.concurrent.atomic.AtomicBoolean[] probing;
    /** How long a failed device rests before a probe write and read may bring it back. */
    private volatile long retryMs = 30_000;
    /** Whether a load checks each block's CRC32C (see {@link #verifyLoads(boolean)}). */
    private volatile boolean verifyLoads = true;
    /** Whether a put's share of each device is one stretch of the batch (see {@link #placeBatchesInRuns}). */
    private volatile boolean batchesInRuns;

    /**
     * @param bandwidth bytes/s per device (from {@link BandwidthProbe} or configuration)
     */
    public PooledTier(String name, String medium, int blockBytes, List<? extends Device> devices, double[] bandwidth,
                      List<DeviceWorker> workers) {
        this(name, medium, blockBytes, devices, bandwidth, workers, Layout.CONTIGUOUS);
    }

    /**
     * @param layout with {@link Layout#perLayer}, every block's layers are checksummed one by one, so a load can
     *               deliver them layer by layer ({@link #getLayers}); a device that keeps a slot table must then keep
     *               the layers' checksums in it (a layered {@link dev.kvpool.agent.tier.FileDevice})
     */
    public PooledTier(String name, String medium, int blockBytes, List<? extends Device> devices, double[] bandwidth,
                      List<DeviceWorker> workers, Layout layout) {
        this.layout = layout;
        this.perLayer = layout.perLayer();
        this.layerBytes = layout.layerBytes(blockBytes);
        this.layerCrcs = new MemorySegment[devices.size()];
        this.name = name;
        this.medium = medium;
        this.blockBytes = blockBytes;
        this.devices = List.copyOf(devices);
        this.workers = List.copyOf(workers);
        this.bandwidth = bandwidth.clone();
        this.placement = new Placement(bandwidth);
        this.slots = new SlotAllocator[devices.size()];
        this.tables = new SlotTable[devices.size()];
        this.base = new int[devices.size() + 1];
        for (int i = 0; i < devices.size(); i++) {
            long next = base[i] + devices.get(i).slotCount();
            if (next > Integer.MAX_VALUE - 1) {
                throw new IllegalArgumentException("tier " + name + " has more than 2^31 slots");
            }
            base[i + 1] = (int) next;
        }
        this.index = new SlotIndex(base[devices.size()]);
        this.pins = new int[base[devices.size()]];
        this.dead = new boolean[base[devices.size()]];
        this.unchecked = new boolean[base[devices.size()]];
        long[][] keptSlots = new long[slots.length][]; // per device, oldest first
        for (int i = 0; i < slots.length; i++) {
            if (devices.get(i).slotBytes() < blockBytes) {
                throw new IllegalArgumentException("device " + devices.get(i).id() + " slots are smaller than a block");
            }
            tables[i] = devices.get(i).slotTable();
            if (devices.get(i).layerMajor() && !perLayer) {
                throw new IllegalArgumentException("device " + devices.get(i).id() + " is layered, tier " + name
                        + " is not");
            }
            if (perLayer) {
                MemorySegment kept = tables[i] == null ? null : tables[i].layerCrcs();
                if (tables[i] != null && (kept == null || tables[i].layers() != layout.layers())) {
                    throw new IllegalArgumentException("device " + devices.get(i).id() + ": its slot table keeps no"
                            + " checksum per layer for " + layout.layers() + " layers");
                }
                layerCrcs[i] = kept != null ? kept
                        : crcArena.allocate(devices.get(i).slotCount() * layout.layers() * 4L, 4);
            }
            java.util.BitSet used = new java.util.BitSet();
            keptSlots[i] = new long[0];
            if (tables[i] != null) {
                keptSlots[i] = tables[i].recoveredSlots();
                for (long s : keptSlots[i]) {
                    used.set((int) s);
                }
                tables[i].discardRecovered();
            }
            slots[i] = new SlotAllocator(devices.get(i).slotCount(), used);
        }
        int duplicates = 0;
        int[] at = new int[slots.length];
        int total = 0;
        for (long[] k : keptSlots) {
            total += k.length;
        }
        // the kept blocks in recency order, captured as they go into the index (see KeptOrder)
        long[] kKeys = new long[total], kParents = new long[total];
        int[] kDevice = new int[total];
        java.util.BitSet kHasParent = new java.util.BitSet(total);
        int m = 0;
        while (true) { // merge the devices' lists by recency, oldest first: the least recently used lead the index
            int d = -1;
            long seq = Long.MAX_VALUE;
            for (int i = 0; i < slots.length; i++) {
                if (at[i] < keptSlots[i].length) {
                    long q = tables[i].seq(keptSlots[i][at[i]]);
                    if (d < 0 || q < seq) {
                        d = i;
                        seq = q;
                    }
                }
            }
            if (d < 0) {
                break;
            }
            long s = keptSlots[d][at[d]++];
            long key = tables[d].key(s);
            int prev = index.find(key);
            if (prev >= 0) { // a key twice (an invalidation lost with power): keep the more recent
                index.remove(prev);
                slots[device(prev)].release(slotOf(prev));
                tables[device(prev)].clear(slotOf(prev));
                duplicates++;
            }
            boolean hasParent = tables[d].hasParent(s);
            long parent = hasParent ? tables[d].parentHash(s) : 0;
            index.add(key, base[d] + (int) s, tables[d].crc(s), hasParent, parent);
            stamp = Math.max(stamp, seq);
            kKeys[m] = key;
            kParents[m] = parent;
            kHasParent.set(m, hasParent);
            kDevice[m++] = d;
        }
        if (duplicates > 0) { // the older record of a key twice left the index: leave it out here too
            int w = 0;
            java.util.Map<Long, Integer> last = new java.util.HashMap<>();
            for (int j = 0; j < m; j++) {
                last.put(kKeys[j], j);
            }
            for (int j = 0; j < m; j++) {
                if (last.get(kKeys[j]) == j) {
                    kKeys[w] = kKeys[j];
                    kParents[w] = kParents[j];
                    kHasParent.set(w, kHasParent.get(j));
                    kDevice[w++] = kDevice[j];
                }
            }
            m = w;
        }
        String[] ids = devices.stream().map(Device::id).toArray(String[]::new);
        this.keptOrder = new KeptOrder(kKeys, kParents, kHasParent, kDevice, m, ids);
        long[] perDevice = blocksPerDevice(); // the index holds just the kept blocks so far
        for (int i = 0; i < tables.length; i++) {
            if (tables[i] != null) {
                keptAtStart.put(devices.get(i).id(), (int) perDevice[i]);
                LOG.infof("%s device %s: slot table %s: %s", name, devices.get(i).id(), tables[i].path(),
                        tables[i].opened());
            }
        }
        if (duplicates > 0) {
            LOG.warnf("%s: %d blocks were recorded twice (records not written back before a power loss?): the more"
                    + " recent of each kept", name, duplicates);
        }
        failStreak = new java.util.concurrent.atomic.AtomicIntegerArray(slots.length);
        failedAtMs = new long[slots.length];
        probing = new java.util.concurrent.atomic.AtomicBoolean[slots.length];
        for (int i = 0; i < slots.length; i++) {
            probing[i] = new java.util.concurrent.atomic.AtomicBoolean();
        }
    }

    /** The device of tier-wide slot {@code g}. */
    private int device(int g) {
        int d = 0;
        while (g >= base[d + 1]) {
            d++;
        }
        return d;
    }

    /** The device-local slot number of tier-wide slot {@code g}. */
    private long slotOf(int g) {
        return g - base[device(g)];
    }

    /** Workers with default scheduling, one per device. */
    public static PooledTier of(String name, String medium, int blockBytes, List<? extends Device> devices,
                                double[] bandwidth) {
        List<DeviceWorker> ws = new ArrayList<>();
        for (Device d : devices) {
            ws.add(new DeviceWorker(d));
        }
        return new PooledTier(name, medium, blockBytes, devices, bandwidth, ws);
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public String medium() {
        return medium;
    }

    @Override
    public int blockBytes() {
        return blockBytes;
    }

    public List<Device> devices() {
        return devices;
    }

    public Layout layout() {
        return layout;
    }

    public List<DeviceWorker> workers() {
        return workers;
    }

    public double[] bandwidth() {
        return bandwidth.clone();
    }

    public long checksumFailures() {
        return checksumFailures.get();
    }

    public long evictions() {
        return evictions.get();
    }

    /** Device ops (reads and writes) that failed, whether or not their device was taken out of use. */
    public long ioFailures() {
        return ioFailures.get();
    }

    /** Whether device {@code d} is out of use after failing {@link #FAIL_AFTER} ops in a row. */
    public synchronized boolean failed(int d) {
        return failedAtMs[d] != 0;
    }

    /** Ids of the devices out of use. */
    public synchronized List<String> failedDevices() {
        List<String> out = new ArrayList<>();
        for (int d = 0; d < failedAtMs.length; d++) {
            if (failedAtMs[d] != 0) {
                out.add(devices.get(d).id());
            }
        }
        return out;
    }

    /**
     * Whether loads check each block against its CRC32C (on by default). Off only for a tier filled solely with bytes
     * already verified or checksummed in this process and kept in memory no other party writes (the GPU tier: the
     * agent's own ECC device memory, filled by write-behind from the host pool with the CRC32C taken at save): there
     * the check costs a CPU pass over every byte of every load and guards only against a flip past ECC. The CRC32C
     * is still kept per block, so turning it back on checks every block from then on.
     */
    public void verifyLoads(boolean on) {
        verifyLoads = on;
    }

    public boolean verifiesLoads() {
        return verifyLoads;
    }

    /**
     * Places each put's blocks so that every device's share (the same number of blocks as bandwidth placement
     * picks) is one stretch of the batch in key order, not interleaved block by block: device 0 takes the first
     * blocks, device 1 the next. Slots are handed out in order, so consecutive blocks then sit in adjacent slots,
     * and a copy between tiers (the host pool's write-behind into the GPU tier; a load into the engine's buffer)
     * merges into a few long copies instead of one per block. For memory tiers; off by default.
     */
    public void placeBatchesInRuns(boolean on) {
        batchesInRuns = on;
    }

    /** How long a failed device rests before it is probed (tests shorten it). */
    public void retryAfter(java.time.Duration d) {
        retryMs = d.toMillis();
    }

    /** {@link #takeKept()} in prefix order (see {@link KeptOrder#inPrefixOrder}). */
    public List<KeptRun> keptInPrefixOrder() {
        return takeKept().inPrefixOrder();
    }

    /**
     * The blocks kept from before the restart, captured when the tier was built, for their {@code stored} events;
     * once: the capture is let go (20 bytes a block), and later calls get none. Safe to order on another thread
     * while the tier serves.
     */
    public synchronized KeptOrder takeKept() {
        KeptOrder k = keptOrder == null ? KeptOrder.EMPTY : keptOrder;
        keptOrder = null;
        return k;
    }

    /** How many blocks each device kept from before a restart, by device id (devices with a slot table). */
    public Map<String, Integer> keptAtStart() {
        return java.util.Collections.unmodifiableMap(keptAtStart);
    }

    @Override
    public void onEvict(Consumer<long[]> listener) {
        this.evictListener = listener;
    }

    @Override
    public synchronized boolean contains(long key) {
        return index.find(key) >= 0;
    }

    /** Device id holding a key, or null. */
    public synchronized String deviceOf(long key) {
        int g = index.find(key);
        return g < 0 ? null : devices.get(device(g)).id();
    }

    @Override
    public synchronized long size() {
        return index.size();
    }

    /** The block hash before each block here, where it was saved with one (null for blocks absent or without). */
    public synchronized Long[] parents(long[] keys) {
        Long[] out = new Long[keys.length];
        for (int i = 0; i < keys.length; i++) {
            int g = index.find(keys[i]);
            out[i] = g < 0 ? null : index.parent(g);
        }
        return out;
    }

    /** Slots free on all devices (a block held plus a slot free is every slot: none leaked). */
    public long freeSlots() {
        long n = 0;
        for (SlotAllocator a : slots) {
            n += a.freeSlots();
        }
        return n;
    }

    /** Slots on all devices. */
    public long capacity() {
        long n = 0;
        for (SlotAllocator a : slots) {
            n += a.capacity();
        }
        return n;
    }

    /** Blocks per device (placement check). */
    public synchronized long[] blocksPerDevice() {
        long[] n = new long[devices.size()];
        for (int g = index.leastRecent(); g >= 0; g = index.moreRecent(g)) {
            n[device(g)]++;
        }
        return n;
    }

    @Override
    public CompletableFuture<boolean[]> put(long[] keys, MemorySegment[] src, boolean deferred) {
        return put(keys, src, deferred, null);
    }

    /** The CRC32C of a block pinned by {@link #pinMemory} (so a write-behind need not checksum it again). */
    public static int crcOf(Object handle) {
        return ((Pin) handle).crc();
    }

    /** As {@link #put(long[], MemorySegment[], boolean)}, with the blocks' CRC32C already known (or null). */
    public CompletableFuture<boolean[]> put(long[] keys, MemorySegment[] src, boolean deferred, int[] knownCrcs) {
        return put(keys, src, deferred, knownCrcs, null);
    }

    /**
     * As {@link #put(long[], MemorySegment[], boolean, int[])}, with the block hash before each block (null array or
     * entries where unknown), kept in the slot tables for the events of a restart.
     */
    public CompletableFuture<boolean[]> put(long[] keys, MemorySegment[] src, boolean deferred, int[] knownCrcs,
                                            Long[] parents) {
        boolean[] eligible = new boolean[keys.length];
        for (int i = 0; i < keys.length; i++) {
            eligible[i] = src[i].byteSize() == blockBytes; // wrong size: not stored
        }
        int[] lcrc = perLayer ? new int[keys.length * layout.layers()] : null; // per layer: computed in any case
        return place(keys, eligible, parents, false, (d, s, mine) -> {
            MemorySegment[] b = new MemorySegment[mine.length];
            for (int j = 0; j < b.length; j++) {
                b[j] = src[mine[j]];
            }
            return io(d, true, deferred, s, b);
        }, placed -> knownCrcs != null && !perLayer ? knownCrcs
                : perLayer ? Checksums.layerCrc32c(keys, src, placed, layout.layers(), lcrc)
                : Checksums.crc32c(src, placed), lcrc);
    }

    /**
     * Moves bytes into slots this tier allocated, for {@link #putVia}: the ops of one device, {@code keyIndexes[j]}
     * into slot {@code slots[j]}; per op whether every byte arrived.
     */
    public interface Fill {
        CompletableFuture<boolean[]> fill(int device, long[] slots, int[] keyIndexes);
    }

    /**
     * Stores blocks whose bytes another path moves straight into this tier's slots (NVMe → GPU through
     * GPUDirect Storage), with their CRC32C as the source knows them: the bytes pass no CPU, so they are not
     * checksummed here. As for {@link #put}: a block is in the index only once its fill went through in full.
     */
    public CompletableFuture<boolean[]> putVia(long[] keys, int[] crcs, Long[] parents, Fill fill) {
        boolean[] eligible = new boolean[keys.length];
        java.util.Arrays.fill(eligible, true);
        if (perLayer) { // its layers' checksums would have to come with the bytes: not a path this tier takes
            return CompletableFuture.completedFuture(new boolean[keys.length]);
        }
        return place(keys, eligible, parents, true, fill, placed -> crcs, null);
    }

    private CompletableFuture<boolean[]> place(long[] keys, boolean[] eligible, Long[] parents, boolean viaFill,
                                               Fill writer,
                                               java.util.function.Function<boolean[], int[]> crcsOf, int[] lcrc) {
        int n = keys.length;
        boolean[] ok = new boolean[n];
        int[] dev = new int[n];
        long[] slot = new long[n];
        Arrays.fill(dev, -1);
        List<Long> evicted = new ArrayList<>();
        long myStamp;
        synchronized (this) {
            probeDue();
            for (int i = 0; i < n; i++) {
                if (!eligible[i]) {
                    continue;
                }
                int present = index.find(keys[i]);
                if (present >= 0) {
                    index.touch(present); // saved again: used
                    ok[i] = true;
                    continue;
                }
                int d = placement.next(x -> failedAtMs[x] == 0 && slots[x].freeSlots() > 0);
                while (d < 0 && evictOne(evicted)) {
                    d = placement.next(x -> failedAtMs[x] == 0 && slots[x].freeSlots() > 0);
                }
                if (d < 0) {
                    continue; // full and nothing evictable
                }
                dev[i] = d;
                slot[i] = slots[d].allocate();
            }
            if (batchesInRuns && devices.size() > 1) {
                groupByDevice(dev, slot);
            }
            long[] placedKeys = java.util.stream.IntStream.range(0, n).filter(i -> dev[i] >= 0)
                    .mapToLong(i -> keys[i]).toArray();
            myStamp = inFlight.begin(placedKeys);
        }
        if (!evicted.isEmpty()) {
            evictListener.accept(evicted.stream().mapToLong(Long::longValue).toArray());
        }
        List<List<Integer>> byDevice = new ArrayList<>();
        List<long[]> slotsOf = new ArrayList<>();
        List<CompletableFuture<boolean[]>> writes = new ArrayList<>();
        for (int d = 0; d < devices.size(); d++) {
            List<Integer> mine = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                if (dev[i] == d) {
                    mine.add(i);
                }
            }
            long[] s = new long[mine.size()];
            for (int j = 0; j < s.length; j++) {
                s[j] = slot[mine.get(j)];
            }
            byDevice.add(mine);
            slotsOf.add(s);
            CompletableFuture<boolean[]> f = null;
            if (!mine.isEmpty()) {
                try {
                    f = writer.fill(d, s, mine.stream().mapToInt(Integer::intValue).toArray());
                } catch (RuntimeException e) { // the slots go back in the handler below, as for a failed write
                    f = CompletableFuture.failedFuture(e);
                }
            }
            writes.add(f);
        }
        // checksums while the devices write (src does not change until the write completes): off the critical path
        boolean[] placed = new boolean[n];
        for (int i = 0; i < n; i++) {
            placed[i] = dev[i] >= 0;
        }
        int[] crc = crcsOf.apply(placed);
        List<CompletableFuture<Void>> parts = new ArrayList<>();
        for (int d = 0; d < devices.size(); d++) {
            CompletableFuture<boolean[]> f = writes.get(d);
            if (f == null) {
                continue;
            }
            List<Integer> mine = byDevice.get(d);
            long[] s = slotsOf.get(d);
            int dd = d;
            // attached after every crc[i] is set, so the handler sees them whichever thread runs it
            parts.add(f.handle((res, err) -> {
                List<Long> lost;
                synchronized (this) {
                    int failedOps = 0;
                    for (int j = 0; j < s.length; j++) {
                        int i = mine.get(j);
                        boolean good = err == null && res[j];
                        failedOps += good ? 0 : 1;
                        boolean taken = index.find(keys[i]) >= 0;
                        boolean removed = inFlight.end(keys[i], myStamp);
                        if (good && !taken && failedAtMs[dd] == 0 && !removed) {
                            if (perLayer) { // before the record: a record that validates has its layers' checksums
                                MemorySegment.copy(lcrc, i * layout.layers(), layerCrcs[dd],
                                        java.lang.foreign.ValueLayout.JAVA_INT, s[j] * layout.layers() * 4L,
                                        layout.layers());
                            }
                            index.add(keys[i], base[dd] + (int) s[j], crc[i], parents == null ? null : parents[i]);
                            unchecked[base[dd] + (int) s[j]] = viaFill;
                            if (tables[dd] != null) {
                                tables[dd].set(s[j], keys[i], crc[i], ++stamp, parents == null ? null : parents[i]);
                            }
                            ok[i] = true;
                        } else {
                            // failed, another put of the same key won, the device went out of use meanwhile, or
                            // the block was removed while it was being written
                            slots[dd].release(s[j]);
                            ok[i] = good && failedAtMs[dd] == 0 && !removed;
                        }
                    }
                    lost = outcome(dd, failedOps, err != null ? err : "a write returned short");
                }
                if (!lost.isEmpty()) {
                    evictListener.accept(lost.stream().mapToLong(Long::longValue).toArray());
                }
                return null;
            }));
        }
        return CompletableFuture.allOf(parts.toArray(CompletableFuture[]::new)).thenApply(v -> ok);
    }

    /**
     * Reassigns the placed blocks' (device, slot) pairs so that each device's share is one stretch in key order:
     * the same slots and counts per device, slots in the order they were handed out. Nothing is recorded yet.
     */
    private void groupByDevice(int[] dev, long[] slot) {
        int[] count = new int[devices.size()];
        for (int d : dev) {
            if (d >= 0) {
                count[d]++;
            }
        }
        long[][] taken = new long[devices.size()][];
        for (int d = 0; d < taken.length; d++) {
            taken[d] = new long[count[d]];
        }
        int[] fill = new int[devices.size()];
        for (int i = 0; i < dev.length; i++) {
            if (dev[i] >= 0) {
                taken[dev[i]][fill[dev[i]]++] = slot[i];
            }
        }
        int d = 0;
        int k = 0;
        for (int i = 0; i < dev.length; i++) {
            if (dev[i] < 0) {
                continue;
            }
            while (k == count[d]) {
                d++;
                k = 0;
            }
            dev[i] = d;
            slot[i] = taken[d][k++];
        }
    }

    /**
     * Whole blocks to or from device {@code d} through its worker. A layered device takes one op per layer: they go
     * layer by layer (layer 0 of every slot, then layer 1, ...), so neighbouring slots make runs on the disk; a
     * block's outcome is whether all its layers moved.
     */
    private CompletableFuture<boolean[]> io(int d, boolean write, boolean deferred, long[] s, MemorySegment[] b) {
        DeviceWorker w = workers.get(d);
        if (!devices.get(d).layerMajor()) {
            return !write ? w.read(s, b) : deferred ? w.writeDeferred(s, b) : w.writeNow(s, b);
        }
        if (!write) {
            List<CompletableFuture<boolean[]>> layers = readLayers(d, s, b);
            return CompletableFuture.allOf(layers.toArray(CompletableFuture[]::new)).thenApply(v -> {
                boolean[] ok = new boolean[s.length];
                java.util.Arrays.fill(ok, true);
                for (CompletableFuture<boolean[]> f : layers) {
                    boolean[] r = f.join();
                    for (int j = 0; j < ok.length; j++) {
                        ok[j] &= r[j];
                    }
                }
                return ok;
            });
        }
        int n = s.length, layers = layout.layers();
        long[] at = new long[n * layers];
        MemorySegment[] bufs = new MemorySegment[n * layers];
        for (int l = 0; l < layers; l++) {
            for (int j = 0; j < n; j++) {
                at[l * n + j] = Device.layerAddress(s[j], l);
                bufs[l * n + j] = b[j].asSlice((long) l * layerBytes, layerBytes);
            }
        }
        CompletableFuture<boolean[]> f = !write ? w.read(at, bufs)
                : deferred ? w.writeDeferred(at, bufs) : w.writeNow(at, bufs);
        return f.thenApply(res -> {
            boolean[] ok = new boolean[n];
            java.util.Arrays.fill(ok, true);
            for (int k = 0; k < res.length; k++) {
                ok[k % n] &= res[k];
            }
            return ok;
        });
    }

    /** Most bytes one read of a layer's run of neighbouring slots moves: the contiguous layout's op for 256 KiB. */
    static final long RUN_BYTES = 256L << 10;
    /**
     * Staging a load's layered reads may hold at once per device (at least two layers): the next layer's reads start
     * as one is done. Small, so that layer 0 does not share the disk with many later layers; 16 MiB in flight keeps
     * a disk busy (fio's 8 x 256 KiB is 2 MiB).
     */
    static final long STAGING_BYTES = 16L << 20;

    /**
     * Reads blocks at slots {@code s} of layered device {@code d} into {@code b} (whole-block buffers), layer by
     * layer: layer l of a run of neighbouring slots is one stretch of the file, so it is one read (up to
     * {@link #RUN_BYTES}) into a staging buffer, then copied to each block's place (O_DIRECT cannot scatter into
     * the engine's buffers, and one 4 KiB op per block and layer costs a virtual disk its IOPS). Layers go in order;
     * {@link #STAGING_BYTES} bounds how many are in flight. Per layer a future, completed on a checking thread once
     * the layer's bytes are in {@code b}, with per block whether they were read in full.
     */
    private List<CompletableFuture<boolean[]>> readLayers(int d, long[] s, MemorySegment[] b) {
        int n = s.length, layers = layout.layers();
        Integer[] order = new Integer[n];
        for (int j = 0; j < n; j++) {
            order[j] = j;
        }
        java.util.Arrays.sort(order, java.util.Comparator.comparingLong(j -> s[j]));
        int maxRun = (int) Math.max(1, RUN_BYTES / layerBytes);
        List<int[]> runs = new ArrayList<>(); // [first position in order, length]
        for (int k = 0; k < n; ) {
            int len = 1;
            while (k + len < n && len < maxRun && s[order[k + len]] == s[order[k + len - 1]] + 1) {
                len++;
            }
            runs.add(new int[] {k, len});
            k += len;
        }
        List<CompletableFuture<boolean[]>> out = new ArrayList<>(layers);
        for (int l = 0; l < layers; l++) {
            out.add(new CompletableFuture<>());
        }
        int window = (int) Math.max(2, Math.min(layers, STAGING_BYTES / Math.max(1, (long) n * layerBytes)));
        java.util.function.IntConsumer[] start = new java.util.function.IntConsumer[1];
        start[0] = l -> {
            java.lang.foreign.Arena staging = java.lang.foreign.Arena.ofShared();
            MemorySegment buf = staging.allocate((long) n * layerBytes, dev.kvpool.agent.io.BlockIo.ALIGN);
            long[] at = new long[runs.size()];
            MemorySegment[] bufs = new MemorySegment[runs.size()];
            for (int r = 0; r < at.length; r++) {
                int[] run = runs.get(r);
                at[r] = Device.layerAddress(s[order[run[0]]], l);
                bufs[r] = buf.asSlice((long) run[0] * layerBytes, (long) run[1] * layerBytes);
            }
            workers.get(d).read(at, bufs).handle((res, err) -> {
                boolean[] read = new boolean[n]; // per position in slot order
                for (int r = 0; r < at.length && err == null; r++) {
                    int[] run = runs.get(r);
                    java.util.Arrays.fill(read, run[0], run[0] + run[1], res[r]);
                }
                return read;
            }).thenCompose(read -> {
                // a run that failed (one bad sector fails the whole read) is read again slot by slot, so one bad
                // block's layer costs that block alone
                List<Integer> again = new ArrayList<>();
                for (int[] run : runs) {
                    if (run[1] > 1 && !read[run[0]]) {
                        for (int k = run[0]; k < run[0] + run[1]; k++) {
                            again.add(k);
                        }
                    }
                }
                if (again.isEmpty()) {
                    return CompletableFuture.completedFuture(read);
                }
                long[] at2 = new long[again.size()];
                MemorySegment[] bufs2 = new MemorySegment[again.size()];
                for (int i = 0; i < at2.length; i++) {
                    int k = again.get(i);
                    at2[i] = Device.layerAddress(s[order[k]], l);
                    bufs2[i] = buf.asSlice((long) k * layerBytes, layerBytes);
                }
                return workers.get(d).read(at2, bufs2).handle((res2, err2) -> {
                    for (int i = 0; i < at2.length; i++) {
                        read[again.get(i)] = err2 == null && res2[i];
                    }
                    return read;
                });
            }).whenCompleteAsync((read, err) -> {
                boolean[] ok = new boolean[n];
                try {
                    for (int k = 0; k < n && err == null; k++) {
                        int j = order[k];
                        if (read[k]) {
                            b[j].asSlice((long) l * layerBytes, layerBytes)
                                    .copyFrom(buf.asSlice((long) k * layerBytes, layerBytes));
                            ok[j] = true;
                        }
                    }
                } finally {
                    staging.close();
                }
                if (l + window < layers) {
                    start[0].accept(l + window);
                }
                out.get(l).complete(ok);
            }, VERIFY);
        };
        for (int l = 0; l < Math.min(window, layers); l++) {
            start[0].accept(l);
        }
        return out;
    }

    /**
     * A load delivered layer by layer: one future per layer, completed with per key whether layer l of its block is
     * in {@code dst} (at l * layer bytes) and verified against that layer's CRC32C; false for keys not here, and
     * for a layer whose read or check failed (the block is then dropped, as a whole-block load drops it). Every
     * layer's reads are queued at once, in layer order on every device (layer 0 of all blocks first), so the devices
     * stay busy while the futures complete about in that order; the caller waits on them in layer order. The last
     * future completes after the blocks are unpinned. Where the tier keeps no per-layer checksums (contiguous), the
     * whole blocks are loaded and verified first: every layer's future is the whole load's.
     */
    public List<CompletableFuture<boolean[]>> getLayers(long[] keys, MemorySegment[] dst) {
        int layers = layout.layers();
        if (!perLayer) {
            CompletableFuture<boolean[]> whole = get(keys, dst);
            return java.util.Collections.nCopies(layers, whole);
        }
        int n = keys.length;
        int[] gs = new int[n];
        int[] want = new int[n * layers]; // the layers' CRC32C, read with the pin held (the slot cannot change)
        java.util.Arrays.fill(gs, -1);
        synchronized (this) {
            for (int i = 0; i < n; i++) {
                int g = index.find(keys[i]);
                if (g >= 0 && dst[i].byteSize() >= blockBytes) {
                    index.touch(g);
                    pins[g]++;
                    gs[i] = g;
                    MemorySegment.copy(layerCrcs[device(g)], java.lang.foreign.ValueLayout.JAVA_INT,
                            slotOf(g) * layers * 4L, want, i * layers, layers);
                }
            }
        }
        List<List<Integer>> byDevice = new ArrayList<>();
        for (int d = 0; d < devices.size(); d++) {
            byDevice.add(new ArrayList<>());
        }
        for (int i = 0; i < n; i++) {
            if (gs[i] >= 0) {
                byDevice.get(device(gs[i])).add(i);
            }
        }
        List<List<CompletableFuture<boolean[]>>> layeredReads = new ArrayList<>(); // per device, layered ones
        for (int d = 0; d < devices.size(); d++) {
            List<Integer> mine = byDevice.get(d);
            if (!devices.get(d).layerMajor() || mine.isEmpty()) {
                layeredReads.add(null);
                continue;
            }
            long[] s = new long[mine.size()];
            MemorySegment[] b = new MemorySegment[mine.size()];
            for (int j = 0; j < s.length; j++) {
                s[j] = slotOf(gs[mine.get(j)]);
                b[j] = dst[mine.get(j)];
            }
            layeredReads.add(readLayers(d, s, b));
        }
        List<CompletableFuture<boolean[]>> out = new ArrayList<>(layers);
        for (int l = 0; l < layers; l++) {
            boolean[] ok = new boolean[n];
            List<CompletableFuture<?>> parts = new ArrayList<>();
            for (int d = 0; d < devices.size(); d++) {
                List<Integer> mine = byDevice.get(d);
                if (mine.isEmpty()) {
                    continue;
                }
                long[] at = new long[mine.size()];
                MemorySegment[] b = new MemorySegment[mine.size()];
                for (int j = 0; j < at.length; j++) {
                    int i = mine.get(j);
                    at[j] = Device.layerAddress(slotOf(gs[i]), l);
                    b[j] = dst[i].asSlice((long) l * layerBytes, layerBytes);
                }
                int dd = d, ll = l;
                // host memory: the layer is copied on the verifying thread, straight from the pinned slot, and
                // checked while it is in the cache (no trip through the device's worker for a memcpy)
                boolean host = devices.get(d).slotMemory(0) != null;
                java.util.function.BiFunction<boolean[], Throwable, Void> check = (res, err) -> {
                    int failedOps = 0;
                    List<Long> dropped = new ArrayList<>();
                    for (int j = 0; j < at.length; j++) {
                        int i = mine.get(j);
                        boolean read = err == null && res[j];
                        boolean good = read && Checksums.layerCrc32c(keys[i], ll, b[j]) == want[i * layers + ll];
                        if (read && !good) {
                            checksumFailures.incrementAndGet();
                        } else if (!read) {
                            failedOps++;
                        }
                        if (!good && drop(keys[i], gs[i])) {
                            dropped.add(keys[i]);
                        }
                        ok[i] = good;
                    }
                    if (failedOps == 0) {
                        failStreak.set(dd, 0);
                    } else {
                        synchronized (this) {
                            dropped.addAll(outcome(dd, failedOps, err != null ? err : "a read returned short"));
                        }
                    }
                    if (!dropped.isEmpty()) {
                        evictListener.accept(dropped.stream().mapToLong(Long::longValue).toArray());
                    }
                    return null;
                };
                parts.add(host ? CompletableFuture.supplyAsync(() -> copyLayer(dd, at, b, ll), VERIFY).handle(check)
                        : layeredReads.get(d) != null ? layeredReads.get(d).get(l).handle(check) // on a checking thread
                        : workers.get(d).read(at, b).handleAsync(check, VERIFY)); // checked off the device's thread
            }
            out.add(CompletableFuture.allOf(parts.toArray(CompletableFuture[]::new)).thenApply(v -> ok));
        }
        CompletableFuture<boolean[]> last = out.get(layers - 1);
        out.set(layers - 1, CompletableFuture.allOf(out.toArray(CompletableFuture[]::new)).handle((v, err) -> {
            unpin(gs);
            return last.join();
        }));
        return out;
    }

    /** Layer {@code layer} of host-memory slots {@code at} into {@code b}: a copy per block, all succeed. */
    private boolean[] copyLayer(int d, long[] at, MemorySegment[] b, int layer) {
        Device dev = devices.get(d);
        boolean[] ok = new boolean[at.length];
        for (int j = 0; j < at.length; j++) {
            b[j].copyFrom(dev.slotMemory(Device.slotOf(at[j])).asSlice((long) layer * layerBytes, layerBytes));
            ok[j] = true;
        }
        return ok;
    }

    /**
     * One device's share of a load, cut into parts of {@link #PIPELINE_BYTES} when it is more than two of them:
     * each part is its own device request, so verifying one part overlaps the transfer of the next instead of
     * adding to it (at GPU speeds the two are of the same order).
     */
    private List<List<Integer>> pipelined(List<Integer> idx) {
        if (idx.isEmpty()) {
            return List.of();
        }
        int per = (int) Math.max(1, PIPELINE_BYTES / blockBytes);
        if (idx.size() <= 2 * per) {
            return List.of(idx);
        }
        List<List<Integer>> out = new ArrayList<>();
        for (int k = 0; k < idx.size(); k += per) {
            out.add(idx.subList(k, Math.min(idx.size(), k + per)));
        }
        return out;
    }

    /**
     * Counts a device request's failed ops: a success ends the streak; {@link #FAIL_AFTER} failures in a row take
     * the device out of use. Returns the keys that went with it (caller holds the lock; tell listeners outside it).
     */
    private List<Long> outcome(int d, int failedOps, Object cause) {
        if (failedOps == 0) {
            failStreak.set(d, 0);
            return List.of();
        }
        ioFailures.addAndGet(failedOps);
        int streak = failStreak.addAndGet(d, failedOps);
        if (failedAtMs[d] != 0 || streak < FAIL_AFTER) {
            return List.of();
        }
        failedAtMs[d] = System.currentTimeMillis();
        List<Long> gone = new ArrayList<>();
        for (int g = index.leastRecent(); g >= 0; ) {
            int next = index.moreRecent(g);
            if (device(g) == d) {
                gone.add(index.key(g));
                index.remove(g);
                forget(g);
                if (pins[g] == 0) {
                    slots[d].release(slotOf(g));
                } else {
                    dead[g] = true; // released by the last reader
                }
            }
            g = next;
        }
        LOG.errorf("%s device %s failed %d ops in a row (last: %s): out of use, its %d blocks are misses from now "
                        + "on; new blocks go to the other devices; probed again every %d s", name, devices.get(d).id(),
                streak, cause instanceof Throwable t ? t.toString() : cause, gone.size(), retryMs / 1000);
        return gone;
    }

    /**
     * Devices out of use for {@link #retryMs}: one probe each (a block written and read back through the device's
     * worker); it passes, the device is back in use. Caller holds the lock; the probe runs on the worker.
     */
    private void probeDue() {
        long now = System.currentTimeMillis();
        for (int d = 0; d < failedAtMs.length; d++) {
            if (failedAtMs[d] == 0 || now - failedAtMs[d] < retryMs || slots[d].freeSlots() == 0
                    || !probing[d].compareAndSet(false, true)) {
                continue;
            }
            failedAtMs[d] = now; // a failed probe waits another retryMs
            int dd = d;
            long slot = slots[d].allocate();
            java.lang.foreign.Arena arena = java.lang.foreign.Arena.ofShared();
            MemorySegment out = arena.allocate(blockBytes, 4096), in = arena.allocate(blockBytes, 4096);
            for (long o = 0; o < blockBytes; o += 8) {
                out.set(java.lang.foreign.ValueLayout.JAVA_LONG_UNALIGNED, o, now ^ (o * 0x9E3779B97F4A7C15L));
            }
            io(d, true, false, new long[]{slot}, new MemorySegment[]{out})
                    .thenCompose(wr -> wr[0] ? io(dd, false, false, new long[]{slot}, new MemorySegment[]{in})
                            : CompletableFuture.completedFuture(new boolean[]{false}))
                    .handle((rd, err) -> {
                        boolean passed = err == null && rd[0] && in.mismatch(out) < 0;
                        synchronized (this) {
                            slots[dd].release(slot);
                            if (passed) {
                                failedAtMs[dd] = 0;
                                failStreak.set(dd, 0);
                                LOG.infof("%s device %s passed a write and read-back probe: in use again", name,
                                        devices.get(dd).id());
                            }
                        }
                        arena.close();
                        probing[dd].set(false);
                        return null;
                    });
        }
    }

    /** Evicts the least recently used unpinned block; false when none can go. Caller holds the lock. */
    private boolean evictOne(List<Long> evicted) {
        for (int g = index.leastRecent(); g >= 0; g = index.moreRecent(g)) {
            if (pins[g] == 0) {
                evicted.add(index.key(g));
                index.remove(g);
                forget(g);
                slots[device(g)].release(slotOf(g));
                evictions.incrementAndGet();
                return true;
            }
        }
        return false;
    }

    @Override
    public CompletableFuture<boolean[]> get(long[] keys, MemorySegment[] dst) {
        int n = keys.length;
        int[] gs = new int[n]; // tier-wide slot per key, -1 when not here
        int[] want = new int[n]; // their CRC32C, taken with the pin (the slot cannot change while pinned)
        java.util.Arrays.fill(gs, -1);
        boolean[] check = new boolean[n];
        boolean anyCheck = false;
        synchronized (this) {
            for (int i = 0; i < n; i++) {
                int g = index.find(keys[i]);
                if (g >= 0 && dst[i].byteSize() >= blockBytes) {
                    index.touch(g);
                    pins[g]++;
                    gs[i] = g;
                    want[i] = index.crc(g);
                    check[i] = verifyLoads || unchecked[g];
                    anyCheck |= check[i];
                }
            }
        }
        boolean[] hit = new boolean[n];
        boolean verify = anyCheck;
        List<CompletableFuture<Void>> parts = new ArrayList<>();
        for (int d = 0; d < devices.size(); d++) {
            List<Integer> all = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                if (gs[i] >= 0 && device(gs[i]) == d) {
                    all.add(i);
                }
            }
            // unverified: nothing to overlap, so one request per device (its copies merge into the longest runs)
            for (List<Integer> mine : verify ? pipelined(all) : all.isEmpty() ? List.<List<Integer>>of() : List.of(all)) {
                long[] s = new long[mine.size()];
                MemorySegment[] b = new MemorySegment[mine.size()];
                for (int j = 0; j < s.length; j++) {
                    s[j] = slotOf(gs[mine.get(j)]);
                    b[j] = dst[mine.get(j)].asSlice(0, blockBytes);
                }
                int dd = d;
                long[] ks = new long[s.length];
                for (int j = 0; j < s.length; j++) {
                    ks[j] = keys[mine.get(j)];
                }
                java.util.function.BiFunction<boolean[], Throwable, Void> done = (res, err) -> {
                    boolean[] which = new boolean[s.length];
                    for (int j = 0; j < s.length; j++) {
                        which[j] = err == null && res[j] && check[mine.get(j)];
                    }
                    int[] crcs = err == null && verify ? perLayer
                            ? Checksums.layerCrc32c(ks, b, which, layout.layers(), new int[s.length * layout.layers()])
                            : Checksums.crc32c(b, which) : null;
                    int failedOps = 0;
                    List<Long> dropped = new ArrayList<>();
                    for (int j = 0; j < s.length; j++) {
                        int i = mine.get(j);
                        boolean read = err == null && res[j];
                        boolean good = read && (!check[i] || crcs[j] == want[i]);
                        if (good && check[i] && unchecked[gs[i]]) {
                            markChecked(keys[i], gs[i]);
                        }
                        if (read && !good) {
                            checksumFailures.incrementAndGet();
                        } else if (!read) {
                            failedOps++; // unreadable: a miss from now on, not an error on every load
                        }
                        if (!good && drop(keys[i], gs[i])) {
                            dropped.add(keys[i]);
                        }
                        hit[i] = good;
                    }
                    if (failedOps == 0) {
                        failStreak.set(dd, 0); // the common case: no lock
                    } else {
                        synchronized (this) {
                            dropped.addAll(outcome(dd, failedOps, err != null ? err : "a read returned short"));
                        }
                    }
                    if (!dropped.isEmpty()) { // the tier no longer has them: a removed event, as for an eviction
                        evictListener.accept(dropped.stream().mapToLong(Long::longValue).toArray());
                    }
                    return null;
                };
                CompletableFuture<boolean[]> read = io(d, false, false, s, b);
                // checksums are verified off the device thread, so the device starts its next part at once
                parts.add(verify ? read.handleAsync(done, VERIFY) : read.handle(done));
            }
        }
        return CompletableFuture.allOf(parts.toArray(CompletableFuture[]::new)).handle((v, err) -> {
            unpin(gs);
            return hit;
        });
    }

    /** A block that came in unchecked ({@link #putVia}) passed its first verified load. */
    private synchronized void markChecked(long key, int g) {
        if (index.find(key) == g) { // still this block (its slot is pinned by the load)
            unchecked[g] = false;
        }
    }

    /** Forgets a block that failed its read or checksum; false when it had gone already. */
    private synchronized boolean drop(long key, int g) {
        if (index.find(key) == g) { // still this block: its slot is pinned, so it cannot hold another one
            index.remove(g);
            forget(g);
            dead[g] = true; // slot released when the last pin goes
            return true;
        }
        return false;
    }

    /** A block left the index: its slot table record goes now, before the slot can be handed out again. */
    private void forget(int g) {
        int d = device(g);
        if (tables[d] != null) {
            tables[d].clear(slotOf(g));
        }
    }

    private synchronized void unpin(int[] gs) {
        for (int g : gs) {
            if (g >= 0 && --pins[g] == 0 && dead[g]) {
                dead[g] = false;
                slots[device(g)].release(slotOf(g));
            }
        }
    }

    /**
     * Pins blocks held in host memory and returns their slot memory (zero-copy source for a write-behind); null
     * entries for keys absent or on devices without host memory. Call {@link #release} when done.
     */
    public synchronized MemorySegment[] pinMemory(long[] keys, Object[] handles) {
        MemorySegment[] out = new MemorySegment[keys.length];
        for (int i = 0; i < keys.length; i++) {
            int g = index.find(keys[i]);
            if (g < 0) {
                continue;
            }
            MemorySegment m = devices.get(device(g)).slotMemory(slotOf(g));
            if (m != null) {
                pins[g]++;
                handles[i] = new Pin(g, index.crc(g));
                out[i] = m.asSlice(0, blockBytes);
            }
        }
        return out;
    }

    /** Where a block lies: the index of its device in {@link #devices}, the device's slot, the block's CRC32C. */
    public record Located(int device, long slot, int crc) {
    }

    /**
     * Pins blocks wherever they are (any device kind: the slot cannot be reused or evicted while pinned) and says
     * where; null entries for keys absent. For moves that bypass this tier's workers (NVMe → GPU through
     * GPUDirect Storage). Call {@link #release} when done.
     */
    public synchronized Located[] pinLocated(long[] keys, Object[] handles) {
        Located[] out = new Located[keys.length];
        for (int i = 0; i < keys.length; i++) {
            int g = index.find(keys[i]);
            if (g < 0) {
                continue;
            }
            pins[g]++;
            handles[i] = new Pin(g, index.crc(g));
            out[i] = new Located(device(g), slotOf(g), index.crc(g));
        }
        return out;
    }

    public void release(Object[] handles) {
        int[] gs = new int[handles.length];
        for (int i = 0; i < handles.length; i++) {
            gs[i] = handles[i] == null ? -1 : ((Pin) handles[i]).slot();
        }
        unpin(gs);
    }

    @Override
    public synchronized boolean remove(long key) {
        boolean onItsWay = inFlight.removed(key); // a write-behind still on its way must not bring it back
        int g = index.find(key);
        if (g < 0) {
            return onItsWay;
        }
        index.remove(g);
        forget(g);
        if (pins[g] == 0) {
            slots[device(g)].release(slotOf(g));
        } else {
            dead[g] = true;
        }
        return true;
    }

    @Override
    public void close() {
        for (DeviceWorker w : workers) {
            w.close();
        }
        synchronized (this) {
            // recency goes into the slot tables here, in one pass, not per load hit: a hit that dirtied a table
            // page would have the kernel write to the device behind the read-first scheduler's back
            for (int g = index.leastRecent(); g >= 0; g = index.moreRecent(g)) {
                int d = device(g);
                if (tables[d] != null) {
                    tables[d].touch(slotOf(g), ++stamp);
                }
            }
        }
        for (Device d : devices) {
            d.close();
        }
        crcArena.close(); // after the workers: no verify reads it any more
    }
}
