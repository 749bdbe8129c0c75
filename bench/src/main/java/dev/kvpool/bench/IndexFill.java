package dev.kvpool.bench;

import dev.kvpool.meta.index.InstanceIndex;
import dev.kvpool.meta.index.Loc;
import java.util.Arrays;
import java.util.SplittableRandom;

/**
 * Fills an instance index through its public write path (startWrite + finishWrite in batches, every session
 * finished) with one SERVING location of spec group 1 on storage 3 per block — the blocks of {@code bench heap} and
 * {@code bench index-restart}.
 */
final class IndexFill {
    private IndexFill() {
    }

    /** Distinct keys spread over the whole long range (an odd multiplier is a bijection on 64 bits). */
    static long key(long seq) {
        return seq * 0x9E3779B97F4A7C15L + 0x632BE59BD9B4E019L;
    }

    /** Word B as slot files use it: file << 24 | slot. */
    static long wordB(long seq) {
        return ((seq >>> 12) << 24) | (seq & 0xFFF);
    }

    /** Blocks {@code from} .. {@code from + count - 1}, a progress line per tenth. */
    static void insert(InstanceIndex idx, long from, long count, int batch) {
        int now = (int) (System.currentTimeMillis() / 1000);
        SplittableRandom random = new SplittableRandom(42 + from);
        long[] keys = new long[batch], a = new long[batch], b = new long[batch];
        boolean[] ok = new boolean[batch];
        Arrays.fill(ok, true);
        long step = Math.max(1, count / 10);
        long t0 = System.nanoTime();
        for (long done = 0; done < count; ) {
            int m = (int) Math.min(batch, count - done);
            if (m != keys.length) {
                keys = new long[m];
                a = new long[m];
                b = new long[m];
                ok = new boolean[m];
                Arrays.fill(ok, true);
            }
            for (int i = 0; i < m; i++) {
                long seq = from + done + i;
                keys[i] = key(seq);
                a[i] = Loc.a(Loc.randomId(random), Loc.NEW, 3, 1);
                b[i] = wordB(seq);
            }
            String session = "fill-" + (from + done);
            var started = idx.startWrite(keys, a, b, 1, s -> true, 0, session, Long.MAX_VALUE, now);
            if (started.capacityExceeded() || started.session().size() != m) {
                throw new IllegalStateException("batch at " + (from + done) + ": " + started.session().size()
                        + " of " + m + " keys inserted");
            }
            if (idx.finishWrite(session, ok, now).served() != m) {
                throw new IllegalStateException("batch at " + (from + done) + " not all served");
            }
            long before = done;
            done += m;
            if (done / step != before / step) {
                System.out.printf("  %,d blocks, %.1f s%n", from + done, (System.nanoTime() - t0) / 1e9);
            }
        }
    }
}
