package dev.kvpool.agent.pool;

import dev.kvpool.agent.io.FileLocks;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;

/**
 * What each slot of a device's slot file holds (key, CRC32C, recency, the block before it), in a memory-mapped file
 * beside it, 32 bytes per slot, so a restarted agent serves the blocks it had instead of starting cold.
 *
 * <p>A record is written only after its block's write completed, and invalidated before its slot can be reused,
 * with plain stores into the mapping: a process crash ({@code kill -9}) loses nothing, because the kernel owns the
 * dirty pages. After a power loss the kernel may not have written the latest records back (it does within ~30 s,
 * and at every clean close): a stale record then points at a slot whose bytes changed, and the block's CRC32C,
 * checked on every load, turns that into a miss. Each record carries a check over (slot, key, CRC) so a torn or
 * zeroed record is never taken for a block.
 *
 * <p>The header names what the keys mean ({@code identity}: instance, spec, model, block geometry): a table written
 * for another instance or block size is discarded, because the same key would then name different bytes. The file
 * is locked while open, so two agents cannot share a directory.
 *
 * <p>In the layered layout the header also names the layer count (a table of version 1 without it was written
 * contiguous: 1), and a CRC32C per layer of each slot follows the records ({@link #layerCrcs}): written before the
 * record's check, so a record that validates has its layers' checksums. A table written for another layer count or
 * slot count (the layered file's regions move with either) is discarded.
 */
public final class SlotTable implements AutoCloseable {
    private static final org.jboss.logging.Logger LOG = org.jboss.logging.Logger.getLogger(SlotTable.class);
    static final long MAGIC = 0x4b56504f4f4c5354L; // "KVPOOLST"
    static final int VERSION = 1;
    static final int HEADER = 4096;
    static final int RECORD = 32;
    private static final int MAX_IDENTITY = HEADER - 64;
    // header fields
    private static final long H_MAGIC = 0, H_VERSION = 8, H_SLOT_BYTES = 12, H_SLOTS = 16, H_CLEAN = 24, H_ID_LEN = 28,
            H_LAYERS = 32, H_ID = 64;
    // record fields
    private static final long R_KEY = 0, R_SEQ = 8, R_CRC = 16, R_CHECK = 20, R_PARENT = 24;
    /** In the seq word: the record has a parent (the block hash before it), for the events of a restart. */
    private static final long HAS_PARENT = 1L << 62, SEQ = HAS_PARENT - 1;

    /**
     * A block found in the table at open: its slot, key, CRC32C, recency (higher is more recent) and the block hash
     * before it, where it was saved with one (null otherwise).
     */
    public record Block(long slot, long key, int crc, long seq, Long parent) {
        public Block(long slot, long key, int crc, long seq) {
            this(slot, key, crc, seq, null);
        }
    }

    private final Path path;
    private final FileChannel channel;
    private final FileLock lock;
    private final Arena arena;
    private final MemorySegment map;
    private final long slots;
    private final int layers;
    private long[] recovered; // slots of the blocks found at open, oldest first
    private final String opened;

    private SlotTable(Path path, FileChannel channel, FileLock lock, Arena arena, MemorySegment map, long slots,
                      int layers, long[] recovered, String opened) {
        this.layers = layers;
        this.path = path;
        this.channel = channel;
        this.lock = lock;
        this.arena = arena;
        this.map = map;
        this.slots = slots;
        this.recovered = recovered;
        this.opened = opened;
    }

    /**
     * Opens (or creates) the table for a device of {@code slots} slots of {@code slotBytes}. Blocks recorded for the
     * same identity and slot size are kept (those beyond a smaller slot count are dropped); anything else starts
     * empty.
     *
     * @throws IOException when the file cannot be used, or another process holds it
     */
    public static SlotTable open(Path path, long slots, int slotBytes, String identity) throws IOException {
        return open(path, slots, slotBytes, identity, true);
    }

    /**
     * As {@link #open(Path, long, int, String)}; {@code bytesKept} false (the slot file is new, say deleted by
     * hand) starts empty, since no recorded block's bytes exist any more.
     */
    public static SlotTable open(Path path, long slots, int slotBytes, String identity, boolean bytesKept)
            throws IOException {
        return open(path, slots, slotBytes, identity, bytesKept, 1);
    }

    /**
     * As {@link #open(Path, long, int, String, boolean)} for a device of {@code layers} regions (1: contiguous; more:
     * layered, with a CRC32C per layer of each slot).
     */
    public static SlotTable open(Path path, long slots, int slotBytes, String identity, boolean bytesKept, int layers)
            throws IOException {
        byte[] id = identity.getBytes(StandardCharsets.UTF_8);
        if (id.length > MAX_IDENTITY) {
            throw new IllegalArgumentException("slot table identity longer than " + MAX_IDENTITY + " bytes");
        }
        java.nio.file.Files.createDirectories(path.toAbsolutePath().getParent());
        FileChannel ch = FileChannel.open(path, StandardOpenOption.READ, StandardOpenOption.WRITE,
                StandardOpenOption.CREATE);
        FileLock lock = FileLocks.tryLock(ch);
        if (lock == null) {
            ch.close();
            throw new IOException(path + " is in use by another agent: each agent needs its own NVMe directories");
        }
        try {
            String opened = null;
            long oldSlots = 0;
            boolean clean = false;
            if (ch.size() >= HEADER) {
                ByteBuffer h = ByteBuffer.allocate(HEADER).order(java.nio.ByteOrder.nativeOrder());
                ch.read(h, 0);
                h.flip();
                int idLen = h.getInt((int) H_ID_LEN);
                String had = idLen >= 0 && idLen <= MAX_IDENTITY
                        ? new String(h.array(), (int) H_ID, idLen, StandardCharsets.UTF_8) : "?";
                if (h.getLong((int) H_MAGIC) != MAGIC || h.getInt((int) H_VERSION) != VERSION) {
                    opened = "not a slot table of this version: started empty";
                } else if (h.getInt((int) H_SLOT_BYTES) != slotBytes) {
                    opened = "written for " + h.getInt((int) H_SLOT_BYTES) + "-byte slots, now " + slotBytes
                            + ": started empty";
                } else if (!had.equals(identity)) {
                    opened = "written for '" + had + "', now '" + identity + "': started empty";
                } else if (Math.max(1, h.getInt((int) H_LAYERS)) != layers) {
                    opened = "written for " + layout(Math.max(1, h.getInt((int) H_LAYERS))) + ", now " + layout(layers)
                            + ": started empty";
                } else if (layers > 1 && h.getLong((int) H_SLOTS) != slots) {
                    opened = "written for " + h.getLong((int) H_SLOTS) + " slots, now " + slots + " (the layered"
                            + " layout's regions moved): started empty";
                } else if (!bytesKept) {
                    opened = "its slot file is new (deleted?): started empty";
                } else {
                    oldSlots = h.getLong((int) H_SLOTS);
                    clean = h.getInt((int) H_CLEAN) == 1;
                }
            } else if (ch.size() > 0) {
                opened = "too short to be a slot table: started empty";
            }
            if (oldSlots == 0) {
                ch.truncate(0); // nothing kept: no record of another layout survives
            }
            long size = HEADER + slots * RECORD + (layers > 1 ? slots * layers * 4L : 0);
            if (ch.size() > size) {
                ch.truncate(size);
            } else if (ch.size() < size) {
                ch.write(ByteBuffer.allocate(1), size - 1);
            }
            Arena arena = Arena.ofShared();
            MemorySegment map = ch.map(FileChannel.MapMode.READ_WRITE, 0, size, arena);
            map.set(ValueLayout.JAVA_LONG, H_MAGIC, MAGIC);
            map.set(ValueLayout.JAVA_INT, H_VERSION, VERSION);
            map.set(ValueLayout.JAVA_INT, H_SLOT_BYTES, slotBytes);
            map.set(ValueLayout.JAVA_LONG, H_SLOTS, slots);
            map.set(ValueLayout.JAVA_INT, H_CLEAN, 0); // in use: set back to 1 by a clean close
            map.set(ValueLayout.JAVA_INT, H_ID_LEN, id.length);
            map.set(ValueLayout.JAVA_INT, H_LAYERS, layers);
            MemorySegment.copy(id, 0, map, ValueLayout.JAVA_BYTE, H_ID, id.length);
            long[] found = scan(map, Math.min(slots, oldSlots));
            if (opened == null) {
                opened = oldSlots == 0 ? "new" : found.length + " blocks kept after a " + (clean ? "clean stop"
                        : "crash or kill (every record checked)") + (oldSlots > slots ? "; slots beyond " + slots
                        + " dropped" : "");
            }
            return new SlotTable(path, ch, lock, arena, map, slots, layers, found, opened);
        } catch (IOException | RuntimeException e) {
            lock.release();
            ch.close();
            throw e;
        }
    }

    /**
     * Slots of the valid records among the first {@code n}, oldest first; the others zeroed. A key may come twice
     * (an invalidation lost with power): {@link PooledTier} keeps the more recent and {@link #clear}s the other.
     * Primitive arrays and a radix sort: a table of millions of blocks costs 16 bytes per block while it is read,
     * not an object per block.
     */
    private static long[] scan(MemorySegment map, long n) {
        long[] slots = new long[(int) Math.min(n, 1 << 16)];
        long[] seqs = new long[slots.length];
        int found = 0;
        long shown = System.nanoTime();
        for (long s = 0; s < n; s++) {
            if ((s & 0xFFFFF) == 0 && System.nanoTime() - shown > 2_000_000_000L) { // ~1.5 s per TiB of blocks
                shown = System.nanoTime();
                LOG.infof("slot table: %d of %d slots read, %d blocks so far", s, n, found);
            }
            long at = HEADER + s * RECORD;
            int check = map.get(ValueLayout.JAVA_INT, at + R_CHECK);
            if (check == 0) {
                continue;
            }
            long key = map.get(ValueLayout.JAVA_LONG, at + R_KEY);
            int crc = map.get(ValueLayout.JAVA_INT, at + R_CRC);
            if (check != check(s, key, crc)) {
                map.set(ValueLayout.JAVA_INT, at + R_CHECK, 0); // torn or foreign: free
                continue;
            }
            if (found == slots.length) {
                slots = java.util.Arrays.copyOf(slots, (int) Math.min(n, 2L * found));
                seqs = java.util.Arrays.copyOf(seqs, slots.length);
            }
            slots[found] = s;
            seqs[found++] = map.get(ValueLayout.JAVA_LONG, at + R_SEQ) & SEQ;
        }
        return sortBy(java.util.Arrays.copyOf(seqs, found), java.util.Arrays.copyOf(slots, found));
    }

    /** {@code values} ordered by {@code keys} (non-negative), stable: an LSD radix sort, 16 bits a pass. */
    static long[] sortBy(long[] keys, long[] values) {
        int n = keys.length;
        long max = 0;
        for (long k : keys) {
            max = Math.max(max, k);
        }
        long[] k2 = new long[n], v2 = new long[n];
        int[] count = new int[1 << 16];
        for (int shift = 0; shift < 64 && (max >>> shift) != 0; shift += 16) {
            java.util.Arrays.fill(count, 0);
            for (long k : keys) {
                count[(int) (k >>> shift) & 0xFFFF]++;
            }
            for (int i = 0, sum = 0; i < count.length; i++) {
                int c = count[i];
                count[i] = sum;
                sum += c;
            }
            for (int i = 0; i < n; i++) {
                int at = count[(int) (keys[i] >>> shift) & 0xFFFF]++;
                k2[at] = keys[i];
                v2[at] = values[i];
            }
            long[] t = keys;
            keys = k2;
            k2 = t;
            t = values;
            values = v2;
            v2 = t;
        }
        return values;
    }

    private static String layout(int layers) {
        return layers == 1 ? "the contiguous layout" : "the layered layout of " + layers + " layers";
    }

    /**
     * The CRC32C of each layer of each slot (int at {@code (slot * layers + layer) * 4}), mapped, where the table is
     * layered; null otherwise. Write a block's entries before {@link #set}ting its record.
     */
    public MemorySegment layerCrcs() {
        return layers == 1 ? null : map.asSlice(HEADER + slots * RECORD, slots * layers * 4L);
    }

    public int layers() {
        return layers;
    }

    /** Never 0, so a zeroed record is empty; mixes the slot in, so a record copied to another slot is invalid. */
    static int check(long slot, long key, int crc) {
        long h = key ^ (slot * 0x9E3779B97F4A7C15L) ^ ((crc & 0xFFFFFFFFL) * 0xC2B2AE3D27D4EB4FL) ^ MAGIC;
        h ^= h >>> 33;
        h *= 0xff51afd7ed558ccdL;
        h ^= h >>> 33;
        h *= 0xc4ceb9fe1a85ec53L;
        h ^= h >>> 33;
        return (int) h | 1;
    }

    /** Slots of the blocks found at open, oldest first (the order a least-recently-used index should take them). */
    public long[] recoveredSlots() {
        return recovered;
    }

    /**
     * The blocks found at open, oldest first, as records (an object per block: for tests and small tables; the
     * tier reads {@link #recoveredSlots} and the fields below).
     */
    public List<Block> recovered() {
        List<Block> out = new ArrayList<>(recovered.length);
        for (long s : recovered) {
            out.add(new Block(s, key(s), crc(s), seq(s), parent(s)));
        }
        return out;
    }

    /** Lets go of {@link #recoveredSlots()}, once the tier has its blocks. */
    public void discardRecovered() {
        recovered = new long[0];
    }

    /** The key recorded in slot {@code s} (meaningful for a recovered or {@link #used} slot). */
    public long key(long s) {
        return map.get(ValueLayout.JAVA_LONG, HEADER + checked(s) * RECORD + R_KEY);
    }

    public int crc(long s) {
        return map.get(ValueLayout.JAVA_INT, HEADER + checked(s) * RECORD + R_CRC);
    }

    /** The recency stamp of slot {@code s} (higher is more recent). */
    public long seq(long s) {
        return map.get(ValueLayout.JAVA_LONG, HEADER + checked(s) * RECORD + R_SEQ) & SEQ;
    }

    public boolean hasParent(long s) {
        return (map.get(ValueLayout.JAVA_LONG, HEADER + checked(s) * RECORD + R_SEQ) & HAS_PARENT) != 0;
    }

    /** The block hash recorded before the one in slot {@code s}, or null. */
    public Long parent(long s) {
        return hasParent(s) ? parentHash(s) : null;
    }

    /** As {@link #parent}, unboxed: meaningful where {@link #hasParent}. */
    public long parentHash(long s) {
        return map.get(ValueLayout.JAVA_LONG, HEADER + checked(s) * RECORD + R_PARENT);
    }

    /** What open found, for the start-up log. */
    public String opened() {
        return opened;
    }

    public Path path() {
        return path;
    }

    /** Whether slot {@code s} holds a recorded block now. */
    public boolean used(long s) {
        return map.get(ValueLayout.JAVA_INT, HEADER + s * RECORD + R_CHECK) != 0;
    }

    /** Records that slot {@code s} holds {@code key} (call once its bytes are written in full). */
    public void set(long s, long key, int crc, long seq) {
        set(s, key, crc, seq, null);
    }

    /** As {@link #set(long, long, int, long)}, with the block hash before this one (null: none known). */
    public void set(long s, long key, int crc, long seq, Long parent) {
        long at = HEADER + checked(s) * RECORD;
        map.set(ValueLayout.JAVA_LONG, at + R_KEY, key);
        map.set(ValueLayout.JAVA_LONG, at + R_PARENT, parent == null ? 0 : parent);
        map.set(ValueLayout.JAVA_LONG, at + R_SEQ, (seq & SEQ) | (parent == null ? 0 : HAS_PARENT));
        map.set(ValueLayout.JAVA_INT, at + R_CRC, crc);
        VarHandle.releaseFence(); // the check last: a record cut short by a crash never validates
        map.set(ValueLayout.JAVA_INT, at + R_CHECK, check(s, key, crc));
    }

    /** Sets the recency of the block in slot {@code s} (its place in the LRU order after a restart). */
    public void touch(long s, long seq) {
        long at = HEADER + checked(s) * RECORD + R_SEQ;
        map.set(ValueLayout.JAVA_LONG, at, (map.get(ValueLayout.JAVA_LONG, at) & HAS_PARENT) | (seq & SEQ));
    }

    /** Slot {@code s} no longer holds a block (call before the slot can be written again). */
    public void clear(long s) {
        map.set(ValueLayout.JAVA_INT, HEADER + checked(s) * RECORD + R_CHECK, 0);
    }

    private long checked(long s) {
        if (s < 0 || s >= slots) {
            throw new IndexOutOfBoundsException("slot " + s + " of " + slots);
        }
        return s;
    }

    /** Writes the dirty records back to the disk now (msync). */
    public void force() {
        map.force();
    }

    @Override
    public void close() {
        try {
            map.force();
            map.set(ValueLayout.JAVA_INT, H_CLEAN, 1);
            map.force();
        } finally {
            arena.close();
            try {
                lock.release();
                channel.close();
            } catch (IOException ignored) {
                // the mapping is written back already; nothing left to save
            }
        }
    }
}
