package dev.kvpool.agent.pool;

import dev.kvpool.agent.sched.DeviceWorker;
import dev.kvpool.agent.tier.Checksums;
import dev.kvpool.agent.tier.Tier;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Iterator;
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
 * full the least recently used block that no one is reading or flushing is evicted.
 */
public final class PooledTier implements Tier {
    /** Where a block lives. {@code pins} counts readers and write-behinds using its slot. */
    static final class Entry {
        final int device;
        final long slot;
        final int crc;
        int pins;
        boolean dead;

        Entry(int device, long slot, int crc) {
            this.device = device;
            this.slot = slot;
            this.crc = crc;
        }
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
    private final List<Device> devices;
    private final List<DeviceWorker> workers;
    private final SlotAllocator[] slots;
    private final Placement placement;
    private final double[] bandwidth;
    private final LinkedHashMap<Long, Entry> index = new LinkedHashMap<>(1024, 0.75f, true);
    private final AtomicLong checksumFailures = new AtomicLong(), evictions = new AtomicLong();
    private volatile Consumer<long[]> evictListener = k -> { };

    /**
     * @param bandwidth bytes/s per device (from {@link BandwidthProbe} or configuration)
     */
    public PooledTier(String name, String medium, int blockBytes, List<? extends Device> devices, double[] bandwidth,
                      List<DeviceWorker> workers) {
        this.name = name;
        this.medium = medium;
        this.blockBytes = blockBytes;
        this.devices = List.copyOf(devices);
        this.workers = List.copyOf(workers);
        this.bandwidth = bandwidth.clone();
        this.placement = new Placement(bandwidth);
        this.slots = new SlotAllocator[devices.size()];
        for (int i = 0; i < slots.length; i++) {
            if (devices.get(i).slotBytes() < blockBytes) {
                throw new IllegalArgumentException("device " + devices.get(i).id() + " slots are smaller than a block");
            }
            slots[i] = new SlotAllocator(devices.get(i).slotCount());
        }
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

    @Override
    public void onEvict(Consumer<long[]> listener) {
        this.evictListener = listener;
    }

    @Override
    public synchronized boolean contains(long key) {
        Entry e = index.get(key);
        return e != null && !e.dead;
    }

    /** Device id holding a key, or null. */
    public synchronized String deviceOf(long key) {
        Entry e = index.get(key);
        return e == null || e.dead ? null : devices.get(e.device).id();
    }

    @Override
    public synchronized long size() {
        return index.size();
    }

    /** Blocks per device (placement check). */
    public synchronized long[] blocksPerDevice() {
        long[] n = new long[devices.size()];
        for (Entry e : index.values()) {
            n[e.device]++;
        }
        return n;
    }

    @Override
    public CompletableFuture<boolean[]> put(long[] keys, MemorySegment[] src, boolean deferred) {
        return put(keys, src, deferred, null);
    }

    /** The CRC32C of a block pinned by {@link #pinMemory} (so a write-behind need not checksum it again). */
    public static int crcOf(Object handle) {
        return ((Entry) handle).crc;
    }

    /** As {@link #put(long[], MemorySegment[], boolean)}, with the blocks' CRC32C already known (or null). */
    public CompletableFuture<boolean[]> put(long[] keys, MemorySegment[] src, boolean deferred, int[] knownCrcs) {
        int n = keys.length;
        boolean[] ok = new boolean[n];
        int[] dev = new int[n];
        long[] slot = new long[n];
        Arrays.fill(dev, -1);
        List<Long> evicted = new ArrayList<>();
        synchronized (this) {
            for (int i = 0; i < n; i++) {
                if (src[i].byteSize() != blockBytes) {
                    continue; // wrong size: not stored
                }
                Entry e = index.get(keys[i]);
                if (e != null && !e.dead) {
                    ok[i] = true;
                    continue;
                }
                int d = placement.next(x -> slots[x].freeSlots() > 0);
                while (d < 0 && evictOne(evicted)) {
                    d = placement.next(x -> slots[x].freeSlots() > 0);
                }
                if (d < 0) {
                    continue; // full and nothing evictable
                }
                dev[i] = d;
                slot[i] = slots[d].allocate();
            }
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
            MemorySegment[] b = new MemorySegment[mine.size()];
            for (int j = 0; j < s.length; j++) {
                s[j] = slot[mine.get(j)];
                b[j] = src[mine.get(j)];
            }
            DeviceWorker w = workers.get(d);
            byDevice.add(mine);
            slotsOf.add(s);
            writes.add(mine.isEmpty() ? null : deferred ? w.writeDeferred(s, b) : w.writeNow(s, b));
        }
        // checksums while the devices write (src does not change until the write completes): off the critical path
        int[] crc;
        if (knownCrcs != null) {
            crc = knownCrcs;
        } else {
            boolean[] placed = new boolean[n];
            for (int i = 0; i < n; i++) {
                placed[i] = dev[i] >= 0;
            }
            crc = Checksums.crc32c(src, placed);
        }
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
                synchronized (this) {
                    for (int j = 0; j < s.length; j++) {
                        int i = mine.get(j);
                        boolean good = err == null && res[j];
                        Entry prev = index.get(keys[i]);
                        if (good && (prev == null || prev.dead)) {
                            index.put(keys[i], new Entry(dd, s[j], crc[i]));
                            ok[i] = true;
                        } else {
                            slots[dd].release(s[j]); // failed, or another put of the same key won
                            ok[i] = good;
                        }
                    }
                }
                return null;
            }));
        }
        return CompletableFuture.allOf(parts.toArray(CompletableFuture[]::new)).thenApply(v -> ok);
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

    /** Evicts the least recently used unpinned block; false when none can go. Caller holds the lock. */
    private boolean evictOne(List<Long> evicted) {
        Iterator<Map.Entry<Long, Entry>> it = index.entrySet().iterator();
        while (it.hasNext()) {
            Map.Entry<Long, Entry> me = it.next();
            Entry e = me.getValue();
            if (e.pins == 0) {
                it.remove();
                slots[e.device].release(e.slot);
                evicted.add(me.getKey());
                evictions.incrementAndGet();
                return true;
            }
        }
        return false;
    }

    @Override
    public CompletableFuture<boolean[]> get(long[] keys, MemorySegment[] dst) {
        int n = keys.length;
        Entry[] es = new Entry[n];
        synchronized (this) {
            for (int i = 0; i < n; i++) {
                Entry e = index.get(keys[i]);
                if (e != null && !e.dead && dst[i].byteSize() >= blockBytes) {
                    e.pins++;
                    es[i] = e;
                }
            }
        }
        boolean[] hit = new boolean[n];
        List<CompletableFuture<Void>> parts = new ArrayList<>();
        for (int d = 0; d < devices.size(); d++) {
            List<Integer> all = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                if (es[i] != null && es[i].device == d) {
                    all.add(i);
                }
            }
            for (List<Integer> mine : pipelined(all)) {
                long[] s = new long[mine.size()];
                MemorySegment[] b = new MemorySegment[mine.size()];
                for (int j = 0; j < s.length; j++) {
                    s[j] = es[mine.get(j)].slot;
                    b[j] = dst[mine.get(j)].asSlice(0, blockBytes);
                }
                // checksums are verified off the device thread, so the device starts its next part at once
                parts.add(workers.get(d).read(s, b).handleAsync((res, err) -> {
                    int[] crcs = err == null ? Checksums.crc32c(b, res) : null;
                    for (int j = 0; j < s.length; j++) {
                        int i = mine.get(j);
                        boolean good = err == null && res[j] && crcs[j] == es[i].crc;
                        if (err == null && res[j] && !good) {
                            checksumFailures.incrementAndGet();
                            drop(keys[i], es[i]);
                        }
                        hit[i] = good;
                    }
                    return null;
                }, VERIFY));
            }
        }
        return CompletableFuture.allOf(parts.toArray(CompletableFuture[]::new)).handle((v, err) -> {
            unpin(es);
            return hit;
        });
    }

    private synchronized void drop(long key, Entry e) {
        if (index.get(key) == e) {
            index.remove(key);
            e.dead = true; // slot released when the last pin goes
        }
    }

    private synchronized void unpin(Entry[] es) {
        for (Entry e : es) {
            if (e != null && --e.pins == 0 && e.dead) {
                slots[e.device].release(e.slot);
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
            Entry e = index.get(keys[i]);
            if (e == null || e.dead) {
                continue;
            }
            MemorySegment m = devices.get(e.device).slotMemory(e.slot);
            if (m != null) {
                e.pins++;
                handles[i] = e;
                out[i] = m.asSlice(0, blockBytes);
            }
        }
        return out;
    }

    public void release(Object[] handles) {
        Entry[] es = new Entry[handles.length];
        for (int i = 0; i < handles.length; i++) {
            es[i] = (Entry) handles[i];
        }
        unpin(es);
    }

    @Override
    public synchronized boolean remove(long key) {
        Entry e = index.remove(key);
        if (e == null) {
            return false;
        }
        if (e.pins == 0) {
            slots[e.device].release(e.slot);
        } else {
            e.dead = true;
        }
        return true;
    }

    @Override
    public void close() {
        for (DeviceWorker w : workers) {
            w.close();
        }
        for (Device d : devices) {
            d.close();
        }
    }
}
