package dev.kvpool.meta.write;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.kvpool.meta.index.Block;
import dev.kvpool.meta.core.Mask;
import dev.kvpool.meta.registry.Instance;
import dev.kvpool.meta.storage.Storage;
import dev.kvpool.meta.support.RedisGroup;
import java.nio.file.Path;
import java.time.Instant;
import java.time.InstantSource;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.LongStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A start over the Redis store that skips the look-up while recent starts found their keys new: it must answer,
 * charge, allocate and touch exactly as the start that looks keys up first.
 */
class GuessedStartIT {
    @TempDir
    Path dir;

    private static final long PER_KEY = 1000; // RedisGroup's one 1000-byte spec

    @Test
    void aGuessedStartOverCachedKeysAnswersChargesAndTouchesAsALookUpWould() throws Exception {
        AtomicLong now = new AtomicLong(1_800_000_000_000L);
        InstantSource clock = () -> Instant.ofEpochMilli(now.get());
        try (RedisGroup rg = new RedisGroup(dir, 100_000_000_000L, null, o -> o);
             Deletions d = new Deletions(rg.registry, rg.ledger, clock)) {
            WritePath w = new WritePath(rg.registry, rg.ledger, d, new WritePath.Settings(30, 3600), clock);
            Instance inst = rg.inst;
            Storage st = rg.registry.storage("nfs_r");
            assertTrue(inst.index.remoteReads());
            rg.save(w, inst, 0, 100, 50); // keys 0..99 cached, every start so far all new
            assertTrue(inst.startExistingShare() < WritePath.GUESS_NEW_BELOW, "all-new starts keep guessing");
            assertEquals(100, inst.allocator(st).usedSlots());

            now.addAndGet(1_000_000);
            long[] keys = LongStream.range(90, 110).toArray(); // 10 cached, 10 new
            WritePath.StartOutcome o = w.start(inst, keys, List.of(), 30, 1);
            Mask existing = o.mask();
            for (int i = 0; i < keys.length; i++) {
                assertEquals(keys[i] < 100, existing.masked(i), "key " + keys[i]);
            }
            assertEquals(10, o.locations().size());
            // quota and slots only for the 10 new keys: what the guess took for the cached ones came back
            assertEquals(110 * PER_KEY, rg.ledger.usage("g").total());
            assertEquals(110, inst.allocator(st).usedSlots());
            // the cached keys the write extends were used: their access time moved to now
            int nowSec = (int) (now.get() / 1000);
            for (long k = 90; k < 100; k++) {
                Block b = inst.index.get(k);
                assertEquals(nowSec, b.accessSec(), "access time of cached key " + k);
            }
            assertEquals(nowSec - 1000, inst.index.get(89).accessSec(), "a key outside the write is not touched");
            rg.finishAll(w, inst, o);
            for (long k = 100; k < 110; k++) {
                assertEquals(dev.kvpool.meta.index.Loc.SERVING, dev.kvpool.meta.index.Loc.status(inst.index.get(k).a(0)));
            }

            // starts that find most keys cached turn the look-up back on
            for (int r = 0; r < 8; r++) {
                rg.finishAll(w, inst, w.start(inst, LongStream.range(0, 100).toArray(), List.of(), 30, 1));
            }
            assertFalse(inst.startExistingShare() < WritePath.GUESS_NEW_BELOW, "share " + inst.startExistingShare());
            assertEquals(110 * PER_KEY, rg.ledger.usage("g").total());
            assertEquals(110, inst.allocator(st).usedSlots());
        }
    }

    @Test
    void aGuessTheQuotaRefusesIsRetriedWithTheLookUp() throws Exception {
        // room for exactly 120 keys: 100 cached + 20 new fits, the guess's 120 more does not
        try (RedisGroup rg = new RedisGroup(dir, 120 * PER_KEY, null, o -> o);
             Deletions d = new Deletions(rg.registry, rg.ledger)) {
            WritePath w = new WritePath(rg.registry, rg.ledger, d, new WritePath.Settings(30, 3600));
            Instance inst = rg.inst;
            Storage st = rg.registry.storage("nfs_r");
            rg.save(w, inst, 0, 100, 50);
            long[] keys = LongStream.range(0, 120).toArray();
            assertTrue(inst.startExistingShare() < WritePath.GUESS_NEW_BELOW);
            WritePath.StartOutcome o = w.start(inst, keys, List.of(), 30, 1);
            assertEquals(20, o.locations().size());
            assertEquals(120 * PER_KEY, rg.ledger.usage("g").total());
            assertEquals(120, inst.allocator(st).usedSlots(), "the refused guess gave its slots back");
            rg.finishAll(w, inst, o);
            assertEquals(120, inst.index.keyCount());
        }
    }
}
