package dev.kvpool.meta.api;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.kvpool.api.proto.meta.*;
import dev.kvpool.meta.support.KvcmTestBase;
import dev.kvpool.meta.support.KvcmTestProfile;
import dev.kvpool.meta.support.MetaApi;
import dev.kvpool.meta.support.Transport;
import io.quarkus.test.junit.QuarkusTest;
import io.quarkus.test.junit.TestProfile;
import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.stream.LongStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/** §5.5 Two-phase write (items 56–78 and 80; 79 is in QuotaTest), over HTTP and gRPC. */
@QuarkusTest
@TestProfile(KvcmTestProfile.class)
class WriteTest extends KvcmTestBase {
    private static final Map<Transport, String> SHARED = new EnumMap<>(Transport.class);

    private String inst(MetaApi a) {
        return SHARED.computeIfAbsent(a.transport, t -> newInstance(a, "write"));
    }

    @ParameterizedTest
    @EnumSource(Transport.class)
    void items56to58_masksAndLocations(Transport t) {
        MetaApi a = api(t);
        String id = inst(a);
        long[] k = rndKeys(5);
        StartWriteCacheResponse s = start(a, id, k);                                            // 56
        assertEquals(offset(0), s.getBlockMask());
        assertEquals(5, s.getLocationsCount());
        // in key order: GetCacheMeta of each key shows the very location that was returned for it
        assertEquals(s.getLocationsList(), metaOf(a, id, k).getLocationsList());
        assertOk(finish(a, id, s.getWriteSessionId(), bools(filled(5, true))));

        long[] p = {k[0], k[1], rndKey(), rndKey(), rndKey()};                                    // 57
        StartWriteCacheResponse s2 = start(a, id, p);
        assertEquals(offset(2), s2.getBlockMask());
        assertEquals(3, s2.getLocationsCount());
        assertEquals(s2.getLocationsList(), metaOf(a, id, p[2], p[3], p[4]).getLocationsList());
        assertOk(finish(a, id, s2.getWriteSessionId(), bools(true, true, true)));
        StartWriteCacheResponse all = start(a, id, k);
        assertEquals(offset(5), all.getBlockMask());
        assertEquals(0, all.getLocationsCount());
        assertFalse(all.getWriteSessionId().isEmpty());
        assertOk(finish(a, id, all.getWriteSessionId(), bools()));

        long[] q = {rndKey(), k[1], rndKey(), k[3], rndKey()};                                    // 58
        StartWriteCacheResponse s3 = start(a, id, q);
        assertEquals(bools(false, true, false, true, false), s3.getBlockMask());
        assertEquals(3, s3.getLocationsCount());
        assertEquals(s3.getLocationsList(), metaOf(a, id, q[0], q[2], q[4]).getLocationsList());
        assertOk(finish(a, id, s3.getWriteSessionId(), bools(true, true, true)));

        // duplicates inside one request: the later occurrence counts as existing and gets no location
        long d = rndKey();
        StartWriteCacheResponse dup = start(a, id, d, d, rndKey());
        assertEquals(bools(false, true, false), dup.getBlockMask());
        assertEquals(2, dup.getLocationsCount());
        assertOk(finish(a, id, dup.getWriteSessionId(), bools(true, true)));
    }

    @ParameterizedTest
    @EnumSource(Transport.class)
    void item59_writingCountsAsExisting(Transport t) {
        MetaApi a = api(t);
        String id = inst(a);
        long[] k = rndKeys(2);
        StartWriteCacheResponse first = start(a, id, k[0]);
        StartWriteCacheResponse second = start(a, id, k[0], k[1]);
        assertEquals(offset(1), second.getBlockMask());
        assertEquals(1, second.getLocationsCount());
        assertNotEquals(first.getWriteSessionId(), second.getWriteSessionId());
        assertOk(finish(a, id, first.getWriteSessionId(), bools(true)));
        assertOk(finish(a, id, second.getWriteSessionId(), bools(true)));
        assertEquals(2, prefix(a, id, k).size());
    }

    static Map<String, String> params(String uri) {
        String query = URI.create(uri).getRawQuery();
        Map<String, String> out = new TreeMap<>();
        for (String kv : query.split("&")) {
            String[] p = kv.split("=", 2);
            out.put(p[0], p[1]);
        }
        return out;
    }

    static List<String> paramNames(String uri) {
        List<String> names = new ArrayList<>();
        for (String kv : URI.create(uri).getRawQuery().split("&")) {
            names.add(kv.split("=", 2)[0]);
        }
        return names;
    }

    @ParameterizedTest
    @EnumSource(Transport.class)
    void items60to63_locationShapesAndUris(Transport t) {
        MetaApi a = api(t);
        String id = uid("uris-" + t.name().toLowerCase());
        // specs registered out of name order, with different sizes
        RegisterInstanceResponse r = a.register(reg(id, 128, "tp1", 2048, "tp0", 1024).build());
        assertOk(r);
        Set<String> storageNames = new HashSet<>();
        for (JsonNode s : MetaApi.tree(r.getStorageConfigs())) {
            storageNames.add(s.path("global_unique_name").asText());
        }
        // several writes, some failed (slots go back), then more writes that reuse them
        Map<Long, CacheLocation> live = new java.util.HashMap<>();
        for (int round = 0; round < 4; round++) {
            long[] k = rndKeys(7);
            StartWriteCacheResponse s = start(a, id, k);
            assertEquals(7, s.getLocationsCount());
            boolean[] ok = new boolean[7];
            for (int i = 0; i < 7; i++) {
                ok[i] = (i + round) % 3 != 0;
                CacheLocation loc = s.getLocations(i);
                assertEquals(StorageType.ST_NFS, loc.getType());                                    // 60
                assertEquals(2, loc.getSpecSize());
                assertEquals(List.of("tp1", "tp0"), loc.getLocationSpecsList().stream().map(LocationSpec::getName).toList());
                for (LocationSpec spec : loc.getLocationSpecsList()) {
                    URI u = URI.create(spec.getUri());
                    assertEquals("file", u.getScheme());
                    // the host is the storage name (no port, no user info); "nfs_01" is no RFC 2396 host name,
                    // so java.net.URI reports it as the authority
                    assertTrue(storageNames.contains(u.getRawAuthority()), spec.getUri());         // 61
                    assertTrue(u.getRawPath().startsWith("/tmp/nfs/" + id + "/" + spec.getName() + "/"), spec.getUri());
                    Map<String, String> p = params(spec.getUri());                                 // 62
                    assertEquals(List.of("blkid", "size"), paramNames(spec.getUri()));
                    assertEquals(spec.getName().equals("tp1") ? "2048" : "1024", p.get("size"));
                    int blkid = Integer.parseInt(p.get("blkid"));
                    assertTrue(blkid >= 0 && blkid < 8, spec.getUri());
                }
            }
            assertOk(finish(a, id, s.getWriteSessionId(), bools(ok)));
            for (int i = 0; i < 7; i++) {
                if (ok[i]) {
                    live.put(k[i], s.getLocations(i));
                }
            }
            runtime.deletions().drain();
        }
        // 63: no two live blocks share (path, blkid) for the same spec; and reads return what writes handed out
        Set<String> slots = new HashSet<>();
        for (Map.Entry<Long, CacheLocation> e : live.entrySet()) {
            assertEquals(e.getValue(), prefix(a, id, e.getKey()).get(0));
            for (LocationSpec spec : e.getValue().getLocationSpecsList()) {
                URI u = URI.create(spec.getUri());
                assertTrue(slots.add(u.getRawPath() + "#" + params(spec.getUri()).get("blkid")), "shared slot " + spec.getUri());
            }
        }
        assertEquals(live.size() * 2, slots.size());
    }

    @Test
    void item64_sessionIdsAreUnique() throws Exception {
        MetaApi h = api(Transport.HTTP);
        String id = inst(h);
        long k = rndKey();
        write(h, id, k);
        Set<String> ids = ConcurrentHashMap.newKeySet();
        // 10 000 starts: most in-process through the RPC implementation both transports share, some over each
        // transport; every one is a 0-location session on an existing key, left to expire
        ExecutorService pool = Executors.newFixedThreadPool(4);
        try {
            List<Future<?>> fs = new ArrayList<>();
            for (int w = 0; w < 4; w++) {
                fs.add(pool.submit(() -> {
                    for (int i = 0; i < 2_450; i++) {
                        StartWriteCacheResponse r = kvcm.meta().startWriteCache(startReq(id, k).setWriteTimeoutSeconds(1).build());
                        assertOk(r);
                        ids.add(r.getWriteSessionId());
                    }
                }));
            }
            for (Future<?> f : fs) {
                f.get(120, TimeUnit.SECONDS);
            }
        } finally {
            pool.shutdownNow();
        }
        for (Transport t : Transport.values()) {
            for (int i = 0; i < 100; i++) {
                StartWriteCacheResponse r = api(t).start(startReq(id, k).setWriteTimeoutSeconds(1).build());
                assertOk(r);
                ids.add(r.getWriteSessionId());
            }
        }
        assertEquals(10_000, ids.size());
        for (String s : ids) {
            assertTrue(!s.isEmpty() && s.length() <= 64, s);
        }
    }

    @ParameterizedTest
    @EnumSource(Transport.class)
    void items65to71_finish(Transport t) {
        MetaApi a = api(t);
        String id = inst(a);
        long[] k = rndKeys(3);
        write(a, id, k[0]);
        StartWriteCacheResponse s = start(a, id, k);                                              // 65
        assertEquals(2, s.getLocationsCount());
        assertOk(finish(a, id, s.getWriteSessionId(), bools(true, true)));
        assertEquals(3, prefix(a, id, k).size());

        for (BlockMask bad : List.of(bools(true, true, true), bools(true), bools(), offset(3), offset(-1),    // 66
                BlockMask.getDefaultInstance())) {
            long[] n = rndKeys(2);
            StartWriteCacheResponse w = start(a, id, n);
            assertCode(ErrorCode.INVALID_ARGUMENT, finish(a, id, w.getWriteSessionId(), bad));
            // 67: the session's locations are released, not left WRITING
            await("locations of a session finished with an invalid mask are released", Duration.ofSeconds(10),
                    () -> statuses(a, id, n).equals(List.of("CLS_NOT_FOUND", "CLS_NOT_FOUND")));
            assertEquals(2, start(a, id, n).getLocationsCount()); // writable again
        }

        long[] o = rndKeys(3);                                                                    // 68
        StartWriteCacheResponse w = start(a, id, o);
        assertOk(finish(a, id, w.getWriteSessionId(), offset(2)));
        assertEquals(2, prefix(a, id, o).size());
        await("the failed third block is deleted", Duration.ofSeconds(10),
                () -> statuses(a, id, o).equals(List.of("CLS_SERVING", "CLS_SERVING", "CLS_NOT_FOUND")));

        assertNotOk(finish(a, id, "no-such-session-" + rndKey(), bools()));                       // 69
        long[] twice = rndKeys(1);
        StartWriteCacheResponse tw = start(a, id, twice);
        assertOk(finish(a, id, tw.getWriteSessionId(), bools(true)));
        assertNotOk(finish(a, id, tw.getWriteSessionId(), bools(true)));
        assertEquals(List.of("CLS_SERVING"), statuses(a, id, twice));

        StartWriteCacheResponse v = start(a, id, rndKey());                                        // 70
        assertCode(ErrorCode.INVALID_ARGUMENT, a.finish(FinishWriteCacheRequest.newBuilder().setInstanceId(id)
                .setWriteSessionId(v.getWriteSessionId()).build()));
        assertCode(ErrorCode.INVALID_ARGUMENT, a.finish(finishReq(id, "", bools(true))));
        // (an empty {} success_blocks is present but does not fit one location: see the invalid masks above)
        assertOk(finish(a, id, v.getWriteSessionId(), bools(true)));

        StartWriteCacheResponse zero = start(a, id, k);                                            // 71
        assertEquals(0, zero.getLocationsCount());
        if (t == Transport.HTTP) {
            String raw = MetaApi.post("finishWriteCache", "{\"trace_id\":\"test_test\",\"instance_id\":\"" + id
                    + "\",\"write_session_id\":\"" + zero.getWriteSessionId() + "\",\"success_blocks\":{\"bool_masks\":{\"offset\":0}}}");
            assertEquals("OK", MetaApi.tree(raw).path("header").path("status").path("code").asText(), raw);
        } else {
            assertOk(finish(a, id, zero.getWriteSessionId(), BlockMask.newBuilder()
                    .setBoolMasks(BoolMasksType.getDefaultInstance()).build()));
        }
        StartWriteCacheResponse zero2 = start(a, id, k);
        assertOk(finish(a, id, zero2.getWriteSessionId(), BlockMask.getDefaultInstance())); // {} on 0 locations
    }

    @Test
    void items72to74_timeouts() {
        // both transports at once, so the test waits once
        record Open(MetaApi a, String id, long[] keys, String session) {
        }
        List<Open> expiring = new ArrayList<>();
        List<Open> empty = new ArrayList<>();
        List<Open> zeroTimeout = new ArrayList<>();
        for (Transport t : Transport.values()) {
            MetaApi a = api(t);
            String id = inst(a);
            long[] k = rndKeys(3);
            StartWriteCacheResponse s = a.start(startReq(id, k).setWriteTimeoutSeconds(2).build());
            assertOk(s);
            assertEquals(3, s.getLocationsCount());
            expiring.add(new Open(a, id, k, s.getWriteSessionId()));
            long e = rndKey();
            write(a, id, e);
            StartWriteCacheResponse z = a.start(startReq(id, e).setWriteTimeoutSeconds(1).build());
            assertOk(z);
            assertEquals(0, z.getLocationsCount());
            empty.add(new Open(a, id, new long[] {e}, z.getWriteSessionId()));
            long[] zk = rndKeys(2);
            StartWriteCacheResponse zt = a.start(startReq(id, zk).setWriteTimeoutSeconds(0).build());
            assertOk(zt);
            zeroTimeout.add(new Open(a, id, zk, zt.getWriteSessionId()));
        }
        long deadline = System.currentTimeMillis() + 2_000;
        sleep(1_200); // real time: the service's own write deadline (0 s) passes on its clock
        for (Open o : zeroTimeout) {                                                              // 74
            assertOk(finish(o.a(), o.id(), o.session(), bools(true, true)));
            assertEquals(2, prefix(o.a(), o.id(), o.keys()).size());
        }
        // 72: by the deadline + 5 s the expired session's keys are writable again; reads never return them
        for (Open o : expiring) {
            long bound = deadline + 5_000 - System.currentTimeMillis();
            await("expired session's keys are released", Duration.ofMillis(Math.max(bound, 1)), () -> {
                assertEquals(0, prefix(o.a(), o.id(), o.keys()).size());
                return statuses(o.a(), o.id(), o.keys()).stream().allMatch("CLS_NOT_FOUND"::equals);
            });
            StartWriteCacheResponse again = start(o.a(), o.id(), o.keys());
            assertEquals(offset(0), again.getBlockMask());
            assertEquals(3, again.getLocationsCount());
            assertNotOk(finish(o.a(), o.id(), o.session(), bools(true, true, true)));
            assertOk(finish(o.a(), o.id(), again.getWriteSessionId(), bools(true, true, true)));
        }
        // 73: a 0-location session can still be finished within 10 s, whatever timeout it asked for
        assertTrue(System.currentTimeMillis() - deadline + 2_000 > 1_500, "past the 1 s timeout");
        for (Open o : empty) {
            assertOk(finish(o.a(), o.id(), o.session(), bools()));
        }
    }

    private String specGroupInstance(MetaApi a) {
        return registered(a, reg(uid("groups-" + a.transport.name().toLowerCase()), 4, "tp0", 1024, "tp1", 2048, "tp2", 512)
                .addLocationSpecGroups(LocationSpecGroup.newBuilder().setName("odd").addSpecNames("tp1"))
                .addLocationSpecGroups(LocationSpecGroup.newBuilder().setName("edge").addSpecNames("tp2").addSpecNames("tp0")));
    }

    @ParameterizedTest
    @EnumSource(Transport.class)
    void items75to77_specGroups(Transport t) {
        MetaApi a = api(t);
        String id = specGroupInstance(a);
        List<Long> tokens = LongStream.rangeClosed(1, 9).boxed().toList(); // 2 keys at block_size 4
        StartWriteCacheResponse s = a.start(StartWriteCacheRequest.newBuilder().setInstanceId(id).addAllTokenIds(tokens)
                .addLocationSpecGroupNames("odd").addLocationSpecGroupNames("edge").setWriteTimeoutSeconds(30).build());
        assertOk(s);                                                                               // 75
        assertEquals(2, s.getLocationsCount());
        assertEquals(1, s.getLocations(0).getSpecSize());
        assertEquals(List.of("tp1"), s.getLocations(0).getLocationSpecsList().stream().map(LocationSpec::getName).toList());
        assertEquals(2, s.getLocations(1).getSpecSize());
        assertEquals(List.of("tp0", "tp2"), s.getLocations(1).getLocationSpecsList().stream().map(LocationSpec::getName).toList());
        assertEquals("2048", params(s.getLocations(0).getLocationSpecs(0).getUri()).get("size"));
        assertOk(finish(a, id, s.getWriteSessionId(), bools(true, true)));
        GetCacheLocationResponse q = a.location(GetCacheLocationRequest.newBuilder().setInstanceId(id)
                .setQueryType(QueryType.QT_PREFIX_MATCH).addAllTokenIds(tokens).build());
        assertEquals(s.getLocationsList(), q.getLocationsList());

        // key mode too
        long[] k = rndKeys(2);
        StartWriteCacheResponse km = a.start(startReq(id, k).addLocationSpecGroupNames("edge")
                .addLocationSpecGroupNames("odd").build());
        assertOk(km);
        assertEquals(List.of(2, 1), km.getLocationsList().stream().map(CacheLocation::getSpecSize).toList());
        assertOk(finish(a, id, km.getWriteSessionId(), bools(true, true)));

        assertNotOk(a.start(StartWriteCacheRequest.newBuilder().setInstanceId(id).addAllTokenIds(tokens)   // 76
                .addLocationSpecGroupNames("odd").build()));
        assertCode(ErrorCode.INVALID_ARGUMENT, a.start(startReq(id, rndKeys(2)).addLocationSpecGroupNames("odd")
                .addLocationSpecGroupNames("odd").addLocationSpecGroupNames("odd").build()));
        long[] u = rndKeys(2);
        StartWriteCacheResponse unknown = a.start(startReq(id, u).addLocationSpecGroupNames("odd")      // 77
                .addLocationSpecGroupNames("nope").build());
        assertNotOk(unknown);
        assertEquals(0, unknown.getLocationsCount());
        assertEquals(List.of("CLS_NOT_FOUND", "CLS_NOT_FOUND"), statuses(a, id, u)); // nothing allocated
    }

    @ParameterizedTest
    @EnumSource(Transport.class)
    void item78_unknownInstance(Transport t) {
        MetaApi a = api(t);
        String nope = uid("nope");
        assertCode(ErrorCode.INSTANCE_NOT_EXIST, a.start(startReq(nope, 1).build()));
        assertCode(ErrorCode.INSTANCE_NOT_EXIST, a.finish(finishReq(nope, "s", bools(true))));
        assertCode(ErrorCode.INSTANCE_NOT_EXIST, a.location(locReq(nope, QueryType.QT_PREFIX_MATCH, 1).build()));
        assertCode(ErrorCode.INSTANCE_NOT_EXIST, a.remove(RemoveCacheRequest.newBuilder().setInstanceId(nope).addBlockKeys(1).build()));
        assertCode(ErrorCode.INSTANCE_NOT_EXIST, a.trim(TrimCacheRequest.newBuilder().setInstanceId(nope)
                .setStrategy(TrimStrategy.TS_REMOVE_ALL_CACHE).build()));
        // empty id: 8 for the pre-checked RPCs
        assertCode(ErrorCode.INSTANCE_NOT_EXIST, a.start(startReq("", 1).build()));
        assertCode(ErrorCode.INSTANCE_NOT_EXIST, a.location(locReq("", QueryType.QT_PREFIX_MATCH, 1).build()));
        // a session of one instance cannot be finished through another
        String id = inst(a);
        StartWriteCacheResponse s = start(a, id, rndKey());
        String other = newInstance(a, "other");
        assertNotOk(finish(a, other, s.getWriteSessionId(), bools(true)));
        assertOk(finish(a, id, s.getWriteSessionId(), bools(true)));
    }

    @Test
    void item80_concurrentStartsForTheSameNewKey() throws Exception {
        MetaApi http = api(Transport.HTTP);
        MetaApi grpc = api(Transport.GRPC);
        String id = inst(http);
        ExecutorService pool = Executors.newFixedThreadPool(2);
        try {
            for (int round = 0; round < 25; round++) {
                long k = rndKey();
                CyclicBarrier barrier = new CyclicBarrier(2);
                List<Future<StartWriteCacheResponse>> fs = new ArrayList<>();
                for (MetaApi a : List.of(http, grpc)) {
                    fs.add(pool.submit(() -> {
                        barrier.await(10, TimeUnit.SECONDS);
                        return a.start(startReq(id, k).build());
                    }));
                }
                List<StartWriteCacheResponse> rs = new ArrayList<>();
                for (Future<StartWriteCacheResponse> f : fs) {
                    rs.add(f.get(30, TimeUnit.SECONDS));
                }
                rs.forEach(KvcmTestBase::assertOk);
                int withLocation = 0;
                for (StartWriteCacheResponse r : rs) {
                    if (r.getLocationsCount() == 1) {
                        withLocation++;
                        assertEquals(offset(0), r.getBlockMask());
                    } else {
                        assertEquals(0, r.getLocationsCount());
                        assertEquals(offset(1), r.getBlockMask());
                    }
                }
                assertEquals(1, withLocation, "round " + round);
                assertEquals(1, runtime.registry().instance(id).index.get(k).size(), "one replica");
                for (StartWriteCacheResponse r : rs) {
                    assertOk(finish(http, id, r.getWriteSessionId(), bools(filled(r.getLocationsCount(), true))));
                }
            }
        } finally {
            pool.shutdownNow();
        }
    }
}
