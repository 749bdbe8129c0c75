package dev.kvpool.meta.slots;

import java.util.HashMap;
import java.util.Map;
import java.util.TreeSet;

/**
 * Free-slot allocation inside the large files of one (instance, storage): file f holds {@code slotsPerFile}
 * blocks, a block is addressed as {@code f << 24 | slot}. Allocation fills the lowest file with room first, so a
 * batch lands in consecutive slots of few files, and a freed slot is reused before a new file is opened. The
 * state is derived from the index (rebuilt at start), never persisted separately.
 */
public final class SlotAllocator implements Slots {
    public static final int SLOT_BITS = 24;
    public static final int MAX_SLOTS = 1 << SLOT_BITS;

    private final int slotsPerFile;
    private final Map<Long, long[]> used = new HashMap<>(); // file -> bitmap
    private final Map<Long, Integer> usedCount = new HashMap<>();
    private final TreeSet<Long> withRoom = new TreeSet<>();
    private long nextFile;

    public SlotAllocator(int slotsPerFile) {
        if (slotsPerFile < 1 || slotsPerFile > MAX_SLOTS) {
            throw new IllegalArgumentException("key_count_per_file must be in [1, " + MAX_SLOTS + "]: " + slotsPerFile);
        }
        this.slotsPerFile = slotsPerFile;
    }

    public static long address(long file, int slot) {
        return (file << SLOT_BITS) | slot;
    }

    public static long file(long address) {
        return address >>> SLOT_BITS;
    }

    public static int slot(long address) {
        return (int) (address & (MAX_SLOTS - 1));
    }

    @Override
    public synchronized long[] allocate(int n) {
        long[] out = new long[n];
        int got = 0;
        while (got < n) {
            long f = withRoom.isEmpty() ? openFile() : withRoom.first();
            long[] bits = used.get(f);
            int count = usedCount.get(f);
            for (int s = 0; s < slotsPerFile && got < n; s++) {
                if ((bits[s >>> 6] & (1L << s)) == 0) {
                    bits[s >>> 6] |= 1L << s;
                    count++;
                    out[got++] = address(f, s);
                }
            }
            usedCount.put(f, count);
            if (count == slotsPerFile) {
                withRoom.remove(f);
            }
        }
        return out;
    }

    private long openFile() {
        long f = nextFile++;
        used.put(f, new long[(slotsPerFile + 63) >>> 6]);
        usedCount.put(f, 0);
        withRoom.add(f);
        return f;
    }

    /** Marks a slot used (startup rebuild). */
    public synchronized void markUsed(long address) {
        long f = file(address);
        int s = slot(address);
        if (s >= slotsPerFile) {
            return; // written under a larger key_count_per_file; never reused
        }
        long[] bits = used.computeIfAbsent(f, k -> new long[(slotsPerFile + 63) >>> 6]);
        if ((bits[s >>> 6] & (1L << s)) != 0) {
            return;
        }
        bits[s >>> 6] |= 1L << s;
        int c = usedCount.merge(f, 1, Integer::sum);
        if (c < slotsPerFile) {
            withRoom.add(f);
        } else {
            withRoom.remove(f);
        }
        nextFile = Math.max(nextFile, f + 1);
    }

    /** Frees a slot; returns true when its file became empty (its bytes can be deleted). */
    @Override
    public synchronized boolean free(long address) {
        long f = file(address);
        int s = slot(address);
        long[] bits = used.get(f);
        if (bits == null || s >= slotsPerFile || (bits[s >>> 6] & (1L << s)) == 0) {
            return false;
        }
        bits[s >>> 6] &= ~(1L << s);
        int c = usedCount.merge(f, -1, Integer::sum);
        if (c == 0) {
            used.remove(f);
            usedCount.remove(f);
            withRoom.remove(f);
            return true;
        }
        withRoom.add(f);
        return false;
    }

    @Override
    /**
     * Rebuilds from every used address (may sort the array in place). A bitmap and a count per file and one set
     * insertion per file with room, in one pass — over an array indexed by file when the numbers are dense, else
     * over the sorted addresses: marking addresses one by one (boxing, a tree-set update each) took ~38 s of a
     * 10 M-block plane's 41 s start-up here; sorting 10 M addresses took ~1 s of what remained.
     */
    public synchronized void rebuild(long[] usedAddresses) {
        used.clear();
        usedCount.clear();
        withRoom.clear();
        nextFile = 0;
        long maxFile = -1;
        for (long a : usedAddresses) {
            maxFile = Math.max(maxFile, file(a));
        }
        if (maxFile >= 0 && maxFile < 4L * usedAddresses.length + 1024) {
            rebuildDense(usedAddresses, (int) maxFile); // file numbers are dense: no sort needed
            return;
        }
        java.util.Arrays.parallelSort(usedAddresses);
        int words = (slotsPerFile + 63) >>> 6;
        java.util.List<Long> room = new java.util.ArrayList<>();
        for (int i = 0; i < usedAddresses.length; ) {
            long f = file(usedAddresses[i]);
            long[] bits = new long[words];
            int count = 0;
            for (; i < usedAddresses.length && file(usedAddresses[i]) == f; i++) {
                int s = slot(usedAddresses[i]);
                if (s < slotsPerFile && (bits[s >>> 6] & (1L << s)) == 0) { // a larger key_count_per_file's: never reused
                    bits[s >>> 6] |= 1L << s;
                    count++;
                }
            }
            if (count == 0) {
                continue;
            }
            used.put(f, bits);
            usedCount.put(f, count);
            if (count < slotsPerFile) {
                room.add(f);
            }
            nextFile = Math.max(nextFile, f + 1);
        }
        withRoom.addAll(room); // ascending: each insertion at the tree's right end
    }

    /** {@link #rebuild} when the file numbers are at most a few per address: bitmaps indexed by file, one pass. */
    private void rebuildDense(long[] usedAddresses, int maxFile) {
        int words = (slotsPerFile + 63) >>> 6;
        long[][] bits = new long[maxFile + 1][];
        int[] counts = new int[maxFile + 1];
        for (long a : usedAddresses) {
            int f = (int) file(a), s = slot(a);
            if (s >= slotsPerFile) {
                continue; // written under a larger key_count_per_file; never reused
            }
            long[] b = bits[f];
            if (b == null) {
                b = bits[f] = new long[words];
            }
            if ((b[s >>> 6] & (1L << s)) == 0) {
                b[s >>> 6] |= 1L << s;
                counts[f]++;
            }
        }
        java.util.List<Long> room = new java.util.ArrayList<>();
        for (int f = 0; f <= maxFile; f++) {
            if (counts[f] == 0) {
                continue;
            }
            used.put((long) f, bits[f]);
            usedCount.put((long) f, counts[f]);
            if (counts[f] < slotsPerFile) {
                room.add((long) f);
            }
            nextFile = f + 1L;
        }
        withRoom.addAll(room);
    }

    @Override
    public synchronized int usedSlots() {
        return usedCount.values().stream().mapToInt(Integer::intValue).sum();
    }

    @Override
    public synchronized int files() {
        return used.size();
    }

    @Override
    public synchronized boolean[] live(long[] files) {
        boolean[] out = new boolean[files.length];
        for (int i = 0; i < files.length; i++) {
            out[i] = used.containsKey(files[i]);
        }
        return out;
    }

    @Override
    public synchronized void openFilesFrom(long file) {
        nextFile = Math.max(nextFile, file);
    }
}
