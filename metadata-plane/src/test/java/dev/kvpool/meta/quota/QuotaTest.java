package dev.kvpool.meta.quota;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.kvpool.api.proto.meta.*;
import dev.kvpool.meta.registry.Instance;
import dev.kvpool.meta.support.KvcmTestBase;
import dev.kvpool.meta.support.MetaApi;
import dev.kvpool.meta.support.QuotaTestProfile;
import dev.kvpool.meta.support.Transport;
import io.quarkus.test.junit.QuarkusTest;
import io.quarkus.test.junit.TestProfile;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Hard quotas and index capacity (§3.9, §5.5 item 79) and the write admission under concurrency, on the small
 * groups of quota-startup.json: "small" (max_key_count 16), "exact" (capacity = 8 blocks of 1000 bytes), "typed"
 * (file-type quota = 5 blocks), "race" (capacity = 20 blocks) and "wide" (no pressure).
 */
@QuarkusTest
@TestProfile(QuotaTestProfile.class)
class QuotaTest extends KvcmTestBase {

    private String register(MetaApi a, String group, long specSize) {
        return registered(a, reg(uid(group + "-" + a.transport.name().toLowerCase()), 16, "tp0", specSize)
                .setInstanceGroup(group));
    }

    private long used(String group) {
        return runtime.ledger().usage(group).total();
    }

    private long keys(String instance) {
        return runtime.registry().instance(instance).index.keyCount();
    }

    private long usedSlots(String instance) {
        return runtime.registry().instance(instance).allocators().values().stream()
                .mapToLong(dev.kvpool.meta.slots.Slots::usedSlots).sum();
    }

    /** The 7 and the nothing-allocated of a refused StartWriteCache. */
    private void refused(MetaApi a, String id, String group, long... newKeys) {
        runtime.deletions().drain();
        long slotsBefore = usedSlots(id);
        long usedBefore = used(group);
        long keysBefore = keys(id);
        long typeBefore = runtime.ledger().usage(group).byType(dev.kvpool.meta.index.StorageKind.FILE);
        StartWriteCacheResponse r = a.start(startReq(id, newKeys).build());
        assertCode(ErrorCode.REACH_MAX_ENTITY_CAPACITY, r);
        assertEquals(0, r.getLocationsCount());
        assertEquals("", r.getWriteSessionId());
        assertEquals(usedBefore, used(group));
        assertEquals(typeBefore, runtime.ledger().usage(group).byType(dev.kvpool.meta.index.StorageKind.FILE));
        assertEquals(keysBefore, keys(id));
        runtime.deletions().drain(); // slots asked for alongside the refused reservation go back
        assertEquals(slotsBefore, usedSlots(id), "file slots of a refused start");
        for (String s : statuses(a, id, newKeys)) {
            assertEquals("CLS_NOT_FOUND", s);
        }
    }

    @ParameterizedTest
    @EnumSource(Transport.class)
    void item79_maxKeyCount(Transport t) {
        MetaApi a = api(t);
        String id = register(a, "small", 1024);
        long[] k = rndKeys(16);
        for (int i = 0; i < 14; i++) {
            write(a, id, k[i]);
        }
        // a batch that would overflow is refused as a whole (nothing of it is allocated)
        refused(a, id, "small", k[14], k[15], rndKey());
        write(a, id, k[14]);
        StartWriteCacheResponse open = start(a, id, k[15]); // an open session holds its key too
        assertEquals(16, keys(id));
        refused(a, id, "small", rndKey());
        // keys that exist are no new keys: OK even at capacity
        StartWriteCacheResponse existing = start(a, id, k[0], k[15]);
        assertEquals(0, existing.getLocationsCount());
        assertOk(finish(a, id, existing.getWriteSessionId(), bools()));
        // a failed write frees its key
        assertOk(finish(a, id, open.getWriteSessionId(), bools(false)));
        await("failed key released", Duration.ofSeconds(10), () -> keys(id) == 15);
        write(a, id, rndKey());
        assertEquals(16, keys(id));
    }

    @Test
    void exactCapacityAdmitsExactlyNBlocks() {
        MetaApi a = api(Transport.HTTP);
        String id = register(a, "exact", 1000); // capacity 8000 = 8 blocks
        long[] k = rndKeys(8);
        for (int i = 0; i < 8; i++) {
            StartWriteCacheResponse s = start(a, id, k[i]);
            assertEquals(1, s.getLocationsCount(), "write " + (i + 1));
            assertOk(finish(a, id, s.getWriteSessionId(), bools(true)));
        }
        assertEquals(8000, used("exact"));
        assertEquals(8, keys(id));
        refused(a, id, "exact", rndKey());
        refused(api(Transport.GRPC), id, "exact", rndKey());
        assertEquals(8, prefix(a, id, k).size());
        // removing one block gives its bytes back: exactly one write fits again
        assertOk(a.remove(RemoveCacheRequest.newBuilder().setInstanceId(id).addBlockKeys(k[0]).build()));
        runtime.deletions().drain();
        await("removed block released", Duration.ofSeconds(10), () -> used("exact") == 7000);
        write(a, id, rndKey());
        refused(a, id, "exact", rndKey());
        assertEquals(8000, used("exact"));
    }

    @ParameterizedTest
    @EnumSource(Transport.class)
    void maxInstanceCountIsEnforcedForNewIds(Transport t) {
        MetaApi a = api(t);
        // group "few" holds at most 2 instances; the two transports share it, so count what is there
        long there = runtime.registry().instancesOf("few").size();
        List<String> mine = new ArrayList<>();
        for (long i = there; i < 2; i++) {
            mine.add(register(a, "few", 100));
        }
        RegisterInstanceResponse full = a.register(reg(uid("few-over"), 16, "tp0", 100).setInstanceGroup("few").build());
        assertCode(ErrorCode.REACH_MAX_ENTITY_CAPACITY, full);
        assertEquals("", full.getStorageConfigs());
        assertEquals(2, runtime.registry().instancesOf("few").size());
        // re-registering an existing id is no new instance
        for (String id : mine) {
            assertOk(a.register(reg(id, 16, "tp0", 100).setInstanceGroup("few").build()));
        }
    }

    @Test
    void typeQuotaAdmitsExactlyNBlocks() {
        MetaApi a = api(Transport.GRPC);
        String id = register(a, "typed", 1000); // file quota 5000 = 5 blocks
        for (int i = 0; i < 5; i++) {
            write(a, id, rndKey());
        }
        assertEquals(5000, runtime.ledger().usage("typed").byType(dev.kvpool.meta.index.StorageKind.FILE));
        refused(a, id, "typed", rndKey());
        refused(api(Transport.HTTP), id, "typed", rndKey(), rndKey());
    }

    /** Keys a StartWriteCache response handed a location to, by decoding its mask. */
    private static List<Long> allocated(long[] req, StartWriteCacheResponse r) {
        boolean[] ex = existing(r.getBlockMask(), req.length);
        List<Long> out = new ArrayList<>();
        for (int i = 0; i < req.length; i++) {
            if (!ex[i]) {
                out.add(req[i]);
            }
        }
        assertEquals(out.size(), r.getLocationsCount(), "one location per new key");
        return out;
    }

    @Test
    void concurrentStartsOnOverlappingKeysAllocateOncePerKey() throws Exception {
        String id = register(api(Transport.HTTP), "wide", 512);
        long[] pool = rndKeys(256);
        Map<Long, AtomicInteger> locations = new ConcurrentHashMap<>();
        ExecutorService threads = Executors.newFixedThreadPool(32);
        CountDownLatch go = new CountDownLatch(1);
        List<Future<?>> fs = new ArrayList<>();
        try {
            for (int w = 0; w < 32; w++) {
                int seed = w;
                fs.add(threads.submit(() -> {
                    Random rnd = new Random(seed);
                    go.await(10, TimeUnit.SECONDS);
                    for (int i = 0; i < 40; i++) {
                        long[] req = new long[1 + rnd.nextInt(12)];
                        int from = rnd.nextInt(pool.length);
                        for (int j = 0; j < req.length; j++) {
                            req[j] = pool[(from + j * (1 + seed % 3)) % pool.length];
                        }
                        StartWriteCacheResponse r = kvcm.meta().startWriteCache(startReq(id, req).build());
                        assertOk(r);
                        for (long k : allocated(req, r)) {
                            locations.computeIfAbsent(k, x -> new AtomicInteger()).incrementAndGet();
                        }
                        if (i % 4 == 0) { // some finish right away, the others stay WRITING
                            assertOk(kvcm.meta().finishWriteCache(finishReq(id, r.getWriteSessionId(),
                                    bools(filled(r.getLocationsCount(), true)))));
                        }
                    }
                    return null;
                }));
            }
            go.countDown();
            for (Future<?> f : fs) {
                f.get(120, TimeUnit.SECONDS);
            }
        } finally {
            threads.shutdownNow();
        }
        Instance inst = runtime.registry().instance(id);
        for (Map.Entry<Long, AtomicInteger> e : locations.entrySet()) {
            assertEquals(1, e.getValue().get(), "locations handed out for key " + e.getKey());
            assertEquals(1, inst.index.get(e.getKey()).size(), "replicas of key " + e.getKey());
        }
        assertEquals(locations.size(), inst.index.keyCount());
        assertEquals(inst.index.keyCount() * 512, used("wide"));
    }

    @Test
    void concurrentStartsNeverOvershootATightQuota() throws Exception {
        MetaApi http = api(Transport.HTTP);
        String id = register(http, "race", 1000);     // capacity 20 000 = 20 blocks
        String id2 = register(http, "race", 1000);    // a second instance shares the group's quota
        long capacity = 20_000;
        long[] pool = rndKeys(64);
        Map<String, Map<Long, AtomicInteger>> locations = Map.of(id, new ConcurrentHashMap<>(), id2, new ConcurrentHashMap<>());
        AtomicBoolean stop = new AtomicBoolean();
        AtomicLong maxSeen = new AtomicLong();
        AtomicInteger refusals = new AtomicInteger();
        AtomicInteger admitted = new AtomicInteger();
        List<String> problems = java.util.Collections.synchronizedList(new ArrayList<>());
        Thread monitor = new Thread(() -> {
            while (!stop.get()) {
                long u = used("race");
                maxSeen.accumulateAndGet(u, Math::max);
                // the ledger is reserved before the index grows and released after it shrinks, so it bounds it
                long k1 = keys(id) * 1000, k2 = keys(id2) * 1000;
                if (u > capacity || k1 > capacity || k2 > capacity) {
                    problems.add("ledger " + u + ", index " + k1 + " + " + k2 + " bytes, over a capacity of " + capacity);
                }
                Thread.onSpinWait();
            }
        }, "quota-monitor");
        monitor.setDaemon(true);
        monitor.start();
        ExecutorService threads = Executors.newFixedThreadPool(32);
        CountDownLatch go = new CountDownLatch(1);
        List<Future<?>> fs = new ArrayList<>();
        try {
            for (int w = 0; w < 32; w++) {
                int seed = w;
                fs.add(threads.submit(() -> {
                    Random rnd = new Random(1000 + seed);
                    go.await(10, TimeUnit.SECONDS);
                    String inst = seed % 2 == 0 ? id : id2;
                    for (int i = 0; i < 60; i++) {
                        long[] req = new long[1 + rnd.nextInt(4)];
                        for (int j = 0; j < req.length; j++) {
                            req[j] = pool[rnd.nextInt(pool.length)];
                        }
                        StartWriteCacheResponse r = kvcm.meta().startWriteCache(startReq(inst, req).build());
                        if (r.getHeader().getStatus().getCode() == ErrorCode.REACH_MAX_ENTITY_CAPACITY) {
                            refusals.incrementAndGet();
                            if (r.getLocationsCount() != 0) {
                                problems.add("a refused start returned locations");
                            }
                            continue;
                        }
                        assertOk(r);
                        admitted.incrementAndGet();
                        for (long k : allocated(req, r)) {
                            locations.get(inst).computeIfAbsent(k, x -> new AtomicInteger()).incrementAndGet();
                        }
                        // churn: most sessions fail (their quota comes back), some become SERVING
                        boolean keep = rnd.nextInt(8) == 0;
                        CommonResponse f = kvcm.meta().finishWriteCache(finishReq(inst, r.getWriteSessionId(),
                                bools(filled(r.getLocationsCount(), keep))));
                        assertOk(f);
                        if (!keep) {
                            for (long k : allocated(req, r)) {
                                locations.get(inst).get(k).decrementAndGet();
                            }
                        }
                    }
                    return null;
                }));
            }
            go.countDown();
            for (Future<?> f : fs) {
                f.get(120, TimeUnit.SECONDS);
            }
        } finally {
            threads.shutdownNow();
            stop.set(true);
            monitor.join(5_000);
        }
        runtime.deletions().drain();
        assertEquals(List.of(), problems);
        assertTrue(maxSeen.get() <= capacity, "max used " + maxSeen.get());
        assertTrue(refusals.get() > 0, "the quota was never reached: the test exercised nothing");
        assertTrue(admitted.get() > 0);
        long indexed = keys(id) + keys(id2);
        assertTrue(indexed * 1000 <= capacity, indexed + " keys");
        await("ledger settles to the index", Duration.ofSeconds(10), () -> used("race") == (keys(id) + keys(id2)) * 1000);
        // each key holds at most one location, and exactly the ones finished successfully are served
        for (String inst : List.of(id, id2)) {
            Map<Long, Integer> live = new HashMap<>();
            locations.get(inst).forEach((k, v) -> live.put(k, v.get()));
            for (Map.Entry<Long, Integer> e : live.entrySet()) {
                assertTrue(e.getValue() == 0 || e.getValue() == 1, "key " + e.getKey() + ": " + e.getValue());
                var bl = runtime.registry().instance(inst).index.get(e.getKey());
                assertEquals(e.getValue(), bl == null ? 0 : bl.size(), "key " + e.getKey());
            }
        }
    }
}
