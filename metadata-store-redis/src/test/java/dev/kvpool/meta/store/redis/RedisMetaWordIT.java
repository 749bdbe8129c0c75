package dev.kvpool.meta.store.redis;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.kvpool.meta.index.Block;
import dev.kvpool.meta.index.InstanceIndex;
import dev.kvpool.meta.index.Loc;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The meta word is changed by Lua on its two 32-bit halves (touch, and the rewrite of a finished write). These
 * check that arithmetic bit for bit against {@link Loc}, at times where the access field crosses the half-word
 * boundary and at the end of the 30-bit range.
 */
class RedisMetaWordIT {
    private TestRedis redis;
    private RedisStore store;
    private String prefix;
    private InstanceIndex ix;

    @BeforeEach
    void open() {
        redis = new TestRedis();
        prefix = TestRedis.uniquePrefix("meta");
        store = RedisStore.connect(TestRedis.URI, TestRedis.options(prefix));
        ix = store.index("m");
    }

    @AfterEach
    void close() {
        try {
            store.close();
            redis.deleteAll(prefix);
        } finally {
            redis.close();
        }
    }

    private void serve(long key, long id, int storage, int nowSec, int minReplicas) {
        String sid = "s" + key + "-" + id;
        ix.startWrite(new long[] {key}, new long[] {Loc.a(id, Loc.NEW, storage, 0)}, new long[] {id}, minReplicas,
                s -> true, 0, sid, 0, nowSec);
        assertEquals(1, ix.finishWrite(sid, new boolean[] {true}, nowSec).served());
    }

    @Test
    void touchAndRewriteMatchLocBitForBit() {
        int[] times = {Loc.EPOCH, Loc.EPOCH + 1, Loc.EPOCH + (1 << 28) - 1, Loc.EPOCH + (1 << 28),
                Loc.EPOCH + (1 << 28) + 12_345, 1_700_000_000, Loc.EPOCH + (1 << 30) - 1};
        long key = 1;
        for (int w : times) {
            for (int t : times) {
                key++;
                serve(key, key * 10, 1, w, 1);
                assertEquals(Loc.meta(w, w), ix.get(key).meta(), "written at " + w);
                ix.touch(new long[] {key}, 0, 1, t);
                // the first hit always raises a zero counter
                assertEquals(Loc.meta(w, t, 1), ix.get(key).meta(), "written " + w + ", touched " + t);
                // an extra replica, finished at a third time: write time changes, access time and counter stay
                int later = times[(int) (key % times.length)];
                serve(key, key * 10 + 1, 2, later, 2);
                Block b = ix.get(key);
                assertEquals(2, b.size());
                assertEquals(Loc.meta(later, t, 1), b.meta(), "rewritten at " + later);
            }
        }
    }

    @Test
    void theHitCounterGrowsLogarithmicallyAndSaturates() {
        serve(7, 70, 1, 1_700_000_000, 1);
        for (int i = 0; i < 3000; i++) {
            ix.touch(new long[] {7}, 0, 1, 1_700_000_100);
        }
        int f = ix.get(7).freq();
        // E[hits to reach f] = 2^f - 1: 3000 hits give about 11-12
        assertTrue(f >= 9 && f <= 14, "counter after 3000 hits: " + f);
        long[] many = new long[64];
        java.util.Arrays.fill(many, 7);
        for (int i = 0; i < 2000; i++) {
            ix.touch(many, 0, many.length, 1_700_000_200);
        }
        assertEquals(Loc.MAX_FREQ, ix.get(7).freq(), "saturates at 15 after 131k hits");
        assertEquals(1_700_000_200, ix.get(7).accessSec());
        assertEquals(1_700_000_000, ix.get(7).writeSec());
    }
}
