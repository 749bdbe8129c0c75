package dev.kvpool.meta.api;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.kvpool.api.proto.meta.*;
import dev.kvpool.meta.support.KvcmTestBase;
import dev.kvpool.meta.support.KvcmTestProfile;
import dev.kvpool.meta.support.MetaApi;
import dev.kvpool.meta.support.Transport;
import io.quarkus.test.junit.QuarkusTest;
import io.quarkus.test.junit.TestProfile;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/** §5.4 Queries (items 42–55), over HTTP and gRPC. */
@QuarkusTest
@TestProfile(KvcmTestProfile.class)
class QueryTest extends KvcmTestBase {
    private static final Map<Transport, String> ONE_SPEC = new EnumMap<>(Transport.class);
    private static final Map<Transport, String> TWO_SPECS = new EnumMap<>(Transport.class);

    private String inst(MetaApi a) {
        return ONE_SPEC.computeIfAbsent(a.transport, t -> newInstance(a, "query"));
    }

    private String twoSpecs(MetaApi a) {
        return TWO_SPECS.computeIfAbsent(a.transport, t -> registered(a,
                reg(uid("query2-" + t.name().toLowerCase()), 128, "tp0", 1024, "tp1", 1024)));
    }

    private static CacheLocation placeholderOf(int specs, String... names) {
        CacheLocation.Builder b = CacheLocation.newBuilder().setType(StorageType.ST_UNSPECIFIED).setSpecSize(specs);
        for (String n : names) {
            b.addLocationSpecs(LocationSpec.newBuilder().setName(n).setUri(""));
        }
        return b.build();
    }

    @ParameterizedTest
    @EnumSource(Transport.class)
    void item42_smoke(Transport t) {
        MetaApi a = api(t);
        long k = rndKey();
        StartWriteCacheResponse s = start(a, inst(a), k);
        assertEquals(offset(0), s.getBlockMask());
        assertEquals(1, s.getLocationsCount());
        assertOk(finish(a, inst(a), s.getWriteSessionId(), bools(true)));
        List<CacheLocation> got = prefix(a, inst(a), k);
        assertEquals(s.getLocationsList(), got);
        CacheLocation loc = got.get(0);
        assertEquals(StorageType.ST_NFS, loc.getType());
        assertEquals(1, loc.getSpecSize());
        assertEquals("tp0", loc.getLocationSpecs(0).getName());
        assertTrue(loc.getLocationSpecs(0).getUri().startsWith("file://nfs_01/tmp/nfs/" + inst(a) + "/tp0/"),
                loc.getLocationSpecs(0).getUri());
    }

    @ParameterizedTest
    @EnumSource(Transport.class)
    void items43to45_prefixMatch(Transport t) {
        MetaApi a = api(t);
        String id = inst(a);
        long[] k = rndKeys(5); // A B C D E, D missing
        assertEquals(List.of(), prefix(a, id, k));                                        // 43
        write(a, id, k[0], k[1], k[2]);
        write(a, id, k[4]);
        assertEquals(3, prefix(a, id, k).size());                                         // 45
        assertEquals(prefix(a, id, k[0], k[1], k[2]), prefix(a, id, k));
        assertEquals(2, query(a, id, offset(1), k).size());
        assertEquals(prefix(a, id, k[1], k[2]), query(a, id, offset(1), k));
        assertEquals(0, query(a, id, offset(3), k).size());
        assertEquals(prefix(a, id, k[1]), query(a, id, bools(true, false, true, false, false), k));
        assertEquals(0, query(a, id, offset(5), k).size());                              // 44
        assertEquals(0, query(a, id, bools(true, true, true, true, true), k).size());
        // a mask longer than the keys, and an absent mask
        assertEquals(0, query(a, id, offset(9), k).size());
        GetCacheLocationResponse noMask = a.location(locReq(id, QueryType.QT_PREFIX_MATCH, k).build());
        assertEquals(3, noMask.getLocationsCount());
    }

    private static List<CacheLocation> query(MetaApi a, String id, BlockMask mask, long... keys) {
        GetCacheLocationResponse r = a.location(locReq(id, QueryType.QT_PREFIX_MATCH, keys).setBlockMask(mask).build());
        assertOk(r);
        return r.getLocationsList();
    }

    @ParameterizedTest
    @EnumSource(Transport.class)
    void item46_prefixStopsAtWriting(Transport t) {
        MetaApi a = api(t);
        String id = inst(a);
        long[] k = rndKeys(4);
        write(a, id, k[0], k[1]);
        StartWriteCacheResponse open = start(a, id, k[2]);
        write(a, id, k[3]);
        assertEquals(2, prefix(a, id, k).size());
        assertEquals(List.of(placeholderOf(1, "tp0")), batch(a, id, k[2]));
        assertOk(finish(a, id, open.getWriteSessionId(), bools(true)));
        assertEquals(4, prefix(a, id, k).size());
    }

    @ParameterizedTest
    @EnumSource(Transport.class)
    void items47and48_batchGet(Transport t) {
        MetaApi a = api(t);
        String id = twoSpecs(a);
        long[] k = rndKeys(3); // A X C
        write(a, id, k[0]);
        write(a, id, k[2]);
        List<CacheLocation> got = batch(a, id, k);
        assertEquals(3, got.size());                                                        // 47
        assertEquals(placeholderOf(2, "tp0", "tp1"), got.get(1));
        assertEquals(prefix(a, id, k[0]).get(0), got.get(0));
        assertEquals(prefix(a, id, k[2]).get(0), got.get(2));
        // 48: the mask is ignored
        GetCacheLocationResponse masked = a.location(locReq(id, QueryType.QT_BATCH_GET, k).setBlockMask(offset(2)).build());
        assertOk(masked);
        assertEquals(got, masked.getLocationsList());
        masked = a.location(locReq(id, QueryType.QT_BATCH_GET, k).setBlockMask(bools(true, true, true)).build());
        assertEquals(got, masked.getLocationsList());
        if (t == Transport.HTTP) {
            String raw = MetaApi.post("getCacheLocation", "{\"instance_id\":\"" + id
                    + "\",\"query_type\":\"QT_BATCH_GET\",\"block_keys\":[" + k[1] + "]}");
            assertTrue(raw.contains("{\"type\":\"ST_UNSPECIFIED\",\"spec_size\":2,\"location_specs\":[{\"name\":\"tp0\","
                    + "\"uri\":\"\"},{\"name\":\"tp1\",\"uri\":\"\"}]}"), raw);
        }
    }

    @ParameterizedTest
    @EnumSource(Transport.class)
    void items49and50_slidingWindow(Transport t) {
        MetaApi a = api(t);
        String id = inst(a);
        long[] k = rndKeys(6);
        write(a, id, k[0], k[1], k[2]);
        write(a, id, k[4]);
        CacheLocation ph = placeholderOf(1, "tp0");
        List<CacheLocation> got = sw(a, id, 2, k);
        assertEquals(6, got.size());                                                        // 49
        assertEquals(List.of(ph, prefix(a, id, k[1]).get(0), prefix(a, id, k[2]).get(0), ph, ph, ph), got);
        write(a, id, k[5]);
        got = sw(a, id, 2, k);
        assertEquals(List.of(ph, ph, ph, ph, prefix(a, id, k[4]).get(0), prefix(a, id, k[5]).get(0)), got);
        assertEquals(List.of(ph, ph, ph, ph, ph, ph), sw(a, id, 4, k));                    // no window of 4
        // the mask is ignored
        GetCacheLocationResponse masked = a.location(locReq(id, QueryType.QT_REVERSE_ROLL_SW_MATCH, k).setSwSize(2)
                .setBlockMask(offset(6)).build());
        assertEquals(got, masked.getLocationsList());
        // 50: out-of-range windows, and sw_size 0 answers promptly
        long t0 = System.nanoTime();
        assertCode(ErrorCode.INVALID_ARGUMENT, a.location(locReq(id, QueryType.QT_REVERSE_ROLL_SW_MATCH, k).setSwSize(7).build()));
        assertCode(ErrorCode.INVALID_ARGUMENT, a.location(locReq(id, QueryType.QT_REVERSE_ROLL_SW_MATCH, k).setSwSize(0).build()));
        assertCode(ErrorCode.INVALID_ARGUMENT, a.location(locReq(id, QueryType.QT_REVERSE_ROLL_SW_MATCH, k).setSwSize(-1).build()));
        assertTrue(System.nanoTime() - t0 < 5_000_000_000L, "sw_size checks must answer promptly");
    }

    private static List<CacheLocation> sw(MetaApi a, String id, int sw, long... keys) {
        GetCacheLocationResponse r = a.location(locReq(id, QueryType.QT_REVERSE_ROLL_SW_MATCH, keys).setSwSize(sw).build());
        assertOk(r);
        return r.getLocationsList();
    }

    @ParameterizedTest
    @EnumSource(Transport.class)
    void items51to53_typeFilterFailedWrites(Transport t) {
        MetaApi a = api(t);
        long k = rndKey();
        write(a, inst(a), k);
        GetCacheLocationResponse noType = a.location(GetCacheLocationRequest.newBuilder().setTraceId("t")
                .setInstanceId(inst(a)).addBlockKeys(k).build());
        assertNotOk(noType);                                                                      // 51
        assertEquals(0, noType.getLocationsCount());

        String id2 = twoSpecs(a);                                                                  // 52
        long[] ks = rndKeys(2);
        write(a, id2, ks);
        GetCacheLocationResponse only1 = a.location(locReq(id2, QueryType.QT_PREFIX_MATCH, ks)
                .addLocationSpecNames("tp1").build());
        assertOk(only1);
        assertEquals(2, only1.getLocationsCount());
        for (CacheLocation l : only1.getLocationsList()) {
            assertEquals(List.of("tp1"), l.getLocationSpecsList().stream().map(LocationSpec::getName).toList());
        }
        GetCacheLocationResponse batch1 = a.location(locReq(id2, QueryType.QT_BATCH_GET, ks[0])
                .addLocationSpecNames("tp1").build());
        assertEquals(1, batch1.getLocations(0).getLocationSpecsCount());

        // 53: a block finished as failed is never read
        long[] f = rndKeys(3);
        StartWriteCacheResponse s = start(a, inst(a), f);
        assertOk(finish(a, inst(a), s.getWriteSessionId(), bools(true, false, true)));
        assertEquals(1, prefix(a, inst(a), f).size());
        List<CacheLocation> b = batch(a, inst(a), f);
        assertEquals(placeholderOf(1, "tp0"), b.get(1));
        assertEquals(s.getLocations(2), b.get(2));
        assertEquals(0, prefix(a, inst(a), f[1]).size());
    }

    @ParameterizedTest
    @EnumSource(Transport.class)
    void items54and55_getCacheMeta(Transport t) {
        MetaApi a = api(t);
        String id = inst(a);
        long[] k = rndKeys(4); // written 0..2, missing 3
        write(a, id, k[0], k[1], k[2]);
        GetCacheMetaResponse m = metaOf(a, id, k);
        assertEquals(4, m.getMetasCount());                                                        // 54
        assertEquals(4, m.getLocationsCount());
        for (int i = 0; i < 3; i++) {
            JsonNode n = MetaApi.tree(m.getMetas(i));
            assertTrue(m.getMetas(i).contains("CLS_SERVING") && m.getMetas(i).contains("\"id\""), m.getMetas(i));
            assertEquals(8, n.path("id").asText().length());
            assertTrue(n.path("id").asText().matches("[a-z0-9]{8}"));
            assertEquals(List.of("id", "status"), List.copyOf(iterableToList(n)));
            assertEquals(prefix(a, id, k[i]).get(0), m.getLocations(i));
        }
        assertEquals("{\"status\":\"CLS_NOT_FOUND\"}", m.getMetas(3));
        assertEquals(CacheLocation.newBuilder().setType(StorageType.ST_UNSPECIFIED).setSpecSize(0).build(), m.getLocations(3));
        // the mask applies and the output is compacted
        GetCacheMetaResponse masked = a.meta(GetCacheMetaRequest.newBuilder().setInstanceId(id).addAllBlockKeys(list(k))
                .setBlockMask(bools(true, false, true, false)).build());
        assertOk(masked);
        assertEquals(List.of(m.getMetas(1), m.getMetas(3)), masked.getMetasList());
        GetCacheMetaResponse byOffset = a.meta(GetCacheMetaRequest.newBuilder().setInstanceId(id).addAllBlockKeys(list(k))
                .setBlockMask(offset(3)).build());
        assertEquals(List.of(m.getMetas(3)), byOffset.getMetasList());
        // a WRITING replica shows as such
        long w = rndKey();
        start(a, id, w);
        assertEquals(List.of("CLS_WRITING"), statuses(a, id, w));

        assertCode(ErrorCode.INSTANCE_NOT_EXIST, a.meta(GetCacheMetaRequest.newBuilder().setInstanceId(uid("nope"))  // 55
                .addBlockKeys(1).build()));
    }

    private static List<String> iterableToList(JsonNode n) {
        java.util.ArrayList<String> out = new java.util.ArrayList<>();
        n.fieldNames().forEachRemaining(out::add);
        return out;
    }
}
