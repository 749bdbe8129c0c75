package dev.kvpool.agent.pool;

import dev.kvpool.agent.io.BlockIo;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.logging.Logger;

/**
 * Start-up bandwidth probe: writes then reads a short run of slots on a device (the slots are scratch: the probe
 * runs before any block is placed) and reports the read and write bandwidth in bytes/s. Placement uses read
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
        int batch = Math.min(8, n);
        try (Arena a = Arena.ofConfined()) {
            MemorySegment buf = a.allocate((long) slotBytes * batch, BlockIo.ALIGN);
            buf.fill((byte) 0x5a);
            MemorySegment[] bufs = new MemorySegment[batch];
            for (int i = 0; i < batch; i++) {
                bufs[i] = buf.asSlice((long) i * slotBytes, slotBytes);
            }
            run(d, true, Math.min(n, 2 * batch), batch, bufs); // warm-up: JIT, page faults, first touch
            run(d, false, Math.min(n, 2 * batch), batch, bufs);
            long w = Long.MAX_VALUE, r = Long.MAX_VALUE;
            for (int round = 0; round < 3; round++) { // best of 3: the probe measures the device, not a hiccup
                w = Math.min(w, run(d, true, n, batch, bufs));
                r = Math.min(r, run(d, false, n, batch, bufs));
            }
            double total = (double) n * slotBytes;
            Result res = new Result(d.id(), total / (r / 1e9), total / (w / 1e9));
            LOG.info(String.format("device %s: read %.0f MB/s, write %.0f MB/s (probe best of 3 x %d x %d KiB)", d.id(),
                    res.readBps / 1e6, res.writeBps / 1e6, n, slotBytes / 1024));
            return res;
        }
    }

    private static long run(Device d, boolean write, int n, int batch, MemorySegment[] bufs) {
        long t0 = System.nanoTime();
        for (int done = 0; done < n; done += batch) {
            int k = Math.min(batch, n - done);
            long[] slots = new long[k];
            MemorySegment[] b = new MemorySegment[k];
            for (int i = 0; i < k; i++) {
                slots[i] = done + i;
                b[i] = bufs[i];
            }
            d.io(write, slots, b);
        }
        return Math.max(1, System.nanoTime() - t0);
    }
}
