package dev.kvpool.agent.pool;

import dev.kvpool.agent.io.BlockIo;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.logging.Logger;

/**
 * Start-up bandwidth probe: writes then reads a short run of slots on a device (scratch slots: the probe runs before
 * any block is placed, and where the device kept blocks from before a restart, only free slots are written; a
 * device with none free is probed by reading alone) and reports the read and write bandwidth in bytes/s. Placement uses read
 * bandwidth, because loads are what an engine waits for.
 */
public final class BandwidthProbe {
    private static final Logger LOG = Logger.getLogger(BandwidthProbe.class.getName());

    public record Result(String device, double readBps, double writeBps) {
    }

    private BandwidthProbe() {
    }

    /** Probes with {@code bytes} of I/O each way (at least one slot), batches of up to 8 slots. */
    public static Result probe(Device d, long bytes) {
        int slotBytes = d.slotBytes();
        int n = (int) Math.max(1, Math.min(d.slotCount(), bytes / slotBytes));
        long[] scratch = scratch(d, n);
        boolean writes = scratch != null;
        if (!writes) { // full of kept blocks: reading them does no harm
            scratch = new long[n];
            for (int i = 0; i < n; i++) {
                scratch[i] = i;
            }
        }
        n = scratch.length;
        int batch = Math.min(8, n);
        try (Arena a = Arena.ofConfined()) {
            MemorySegment buf = a.allocate((long) slotBytes * batch, BlockIo.ALIGN);
            buf.fill((byte) 0x5a);
            MemorySegment[] bufs = new MemorySegment[batch];
            for (int i = 0; i < batch; i++) {
                bufs[i] = buf.asSlice((long) i * slotBytes, slotBytes);
            }
            if (writes) {
                run(d, true, scratch, Math.min(n, 2 * batch), batch, bufs); // warm-up: JIT, page faults, first touch
            }
            run(d, false, scratch, Math.min(n, 2 * batch), batch, bufs);
            long w = Long.MAX_VALUE, r = Long.MAX_VALUE;
            for (int round = 0; round < 3; round++) { // best of 3: the probe measures the device, not a hiccup
                if (writes) {
                    w = Math.min(w, run(d, true, scratch, n, batch, bufs));
                }
                r = Math.min(r, run(d, false, scratch, n, batch, bufs));
            }
            double total = (double) n * slotBytes;
            Result res = new Result(d.id(), total / (r / 1e9), writes ? total / (w / 1e9) : Double.NaN);
            LOG.info(String.format("device %s: read %.0f MB/s, write %.0f MB/s (probe best of 3 x %d x %d KiB)", d.id(),
                    res.readBps / 1e6, res.writeBps / 1e6, n, slotBytes / 1024));
            return res;
        }
    }

    /** Up to {@code n} slots holding no kept block (lowest first); null when there is none. */
    private static long[] scratch(Device d, int n) {
        SlotTable t = d.slotTable();
        if (t == null) {
            long[] s = new long[n];
            for (int i = 0; i < n; i++) {
                s[i] = i;
            }
            return s;
        }
        long[] s = new long[n];
        int k = 0;
        for (long slot = 0; slot < d.slotCount() && k < n; slot++) {
            if (!t.used(slot)) {
                s[k++] = slot;
            }
        }
        return k == 0 ? null : java.util.Arrays.copyOf(s, k);
    }

    private static long run(Device d, boolean write, long[] scratch, int n, int batch, MemorySegment[] bufs) {
        long t0 = System.nanoTime();
        for (int done = 0; done < n; done += batch) {
            int k = Math.min(batch, n - done);
            long[] slots = new long[k];
            MemorySegment[] b = new MemorySegment[k];
            for (int i = 0; i < k; i++) {
                slots[i] = scratch[done + i];
                b[i] = bufs[i];
            }
            d.io(write, slots, b);
        }
        return Math.max(1, System.nanoTime() - t0);
    }
}
