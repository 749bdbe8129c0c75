package dev.kvpool.meta.api;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
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
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import java.util.stream.LongStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/** §5.10 Later additions (items 119–126, 128), over HTTP and gRPC. */
@QuarkusTest
@TestProfile(KvcmTestProfile.class)
class PartBTest extends KvcmTestBase {

    @Test
    void item119_clusterInfoOverGrpc() {
        GetClusterInfoResponse r = api(Transport.GRPC).clusterInfo(GetClusterInfoRequest.newBuilder()
                .setTraceId("health-check").build());
        assertOk(r);
        assertFalse(r.getSelfNodeId().isEmpty());
        assertEquals(r.getSelfNodeId(), r.getLeaderNodeId());
        assertTrue(r.hasLeaderEndpoint());
        assertFalse(r.getLeaderEndpoint().getHost().isEmpty());
        assertEquals(16381, r.getLeaderEndpoint().getMetaRpcPort());
        assertTrue(r.getLeaderEndpoint().getMetaHttpPort() > 0);
        // no instance pre-check
        assertOk(api(Transport.GRPC).clusterInfo(GetClusterInfoRequest.newBuilder().setInstanceId("unknown").build()));
    }

    @Test
    void item120_clusterInfoOverHttpPointsAtTheLeader() throws Exception {
        JsonNode r = MetaApi.tree(MetaApi.post("getClusterInfo", "{\"trace_id\":\"t\"}"));
        assertEquals("OK", r.path("header").path("status").path("code").asText());
        JsonNode ep = r.path("leader_endpoint");
        String host = ep.path("host").asText();
        int port = ep.path("meta_http_port").asInt();
        assertFalse(host.isEmpty());
        assertTrue(port > 0 && ep.path("meta_rpc_port").asInt() > 0, ep.toString());
        GetClusterInfoResponse g = api(Transport.GRPC).clusterInfo(GetClusterInfoRequest.newBuilder().setTraceId("t").build());
        assertEquals(g.getLeaderEndpoint().getHost(), host);
        assertEquals(g.getLeaderEndpoint().getMetaHttpPort(), port);
        // http://{host}:{meta_http_port} reaches this meta HTTP service
        HttpResponse<String> via = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build().send(
                HttpRequest.newBuilder(URI.create("http://" + host + ":" + port + "/api/getClusterInfo"))
                        .timeout(Duration.ofSeconds(10)).POST(HttpRequest.BodyPublishers.ofString("{\"trace_id\":\"v\"}")).build(),
                HttpResponse.BodyHandlers.ofString());
        assertEquals(200, via.statusCode());
        assertEquals(r.path("self_node_id"), MetaApi.tree(via.body()).path("self_node_id"));
    }

    private static long len(MetaApi a, String id, QueryType t, long... keys) {
        GetCacheLocationLenResponse r = a.locationLen(GetCacheLocationLenRequest.newBuilder().setTraceId("t")
                .setInstanceId(id).setQueryType(t).addAllBlockKeys(list(keys)).build());
        assertOk(r);
        return r.getCacheLocationLen();
    }

    @ParameterizedTest
    @EnumSource(Transport.class)
    void items121to124_lengthAndByBackend(Transport t) {
        MetaApi a = api(t);
        String id = newInstance(a, "len");
        assertEquals(0, len(a, id, QueryType.QT_BATCH_GET, 1, 2, 3));
        write(a, id, 1, 2, 3);
        assertEquals(3, len(a, id, QueryType.QT_PREFIX_MATCH, 1, 2, 3, 8, 5, 6));                     // 121
        assertEquals(0, len(a, id, QueryType.QT_PREFIX_MATCH, 999, 1, 2));
        if (t == Transport.HTTP) {
            String raw = MetaApi.post("getCacheLocationLen", "{\"trace_id\":\"t\",\"instance_id\":\"" + id
                    + "\",\"query_type\":\"QT_PREFIX_MATCH\",\"block_keys\":[1,2,3,8,5,6]}");
            assertTrue(raw.contains("\"cache_location_len\":\"3\""), raw);
        }
        assertEquals(batch(a, id, 1, 2, 3).size(), len(a, id, QueryType.QT_BATCH_GET, 1, 2, 3));

        String id2 = newInstance(a, "len2");                                                          // 122
        StartWriteCacheResponse s = start(a, id2, 1, 2, 3, 4, 5, 6, 7);
        assertOk(finish(a, id2, s.getWriteSessionId(), offset(5)));
        assertEquals(4, len(a, id2, QueryType.QT_BATCH_GET, 1, 2, 8, 4, 5, 9, 6));
        GetCacheLocationLenResponse sw = a.locationLen(GetCacheLocationLenRequest.newBuilder().setInstanceId(id2)
                .setQueryType(QueryType.QT_REVERSE_ROLL_SW_MATCH).addAllBlockKeys(list(1, 2, 3, 4, 5, 6, 7)).setSwSize(3).build());
        assertOk(sw);
        assertEquals(3, sw.getCacheLocationLen());
        assertCode(ErrorCode.INVALID_ARGUMENT, a.locationLen(GetCacheLocationLenRequest.newBuilder().setInstanceId(id2)
                .setQueryType(QueryType.QT_REVERSE_ROLL_SW_MATCH).addAllBlockKeys(list(1, 2)).setSwSize(0).build()));
        assertCode(ErrorCode.INSTANCE_NOT_EXIST, a.locationLen(GetCacheLocationLenRequest.newBuilder().setInstanceId(uid("x"))
                .setQueryType(QueryType.QT_PREFIX_MATCH).addBlockKeys(1).build()));

        write(a, id, 100, 300);                                                                       // 123
        BackendLocationSelector nfs = BackendLocationSelector.newBuilder().setBackendType(StorageType.ST_NFS)
                .setStrategy(LocationSelectStrategy.LSS_WEIGHTED_RANDOM).build();
        GetCacheLocationsByBackendResponse b = a.byBackend(GetCacheLocationsByBackendRequest.newBuilder()
                .setTraceId("t").setInstanceId(id).setQueryType(QueryType.QT_BATCH_GET).addAllBlockKeys(list(100, 200, 300))
                .addBackendSelectors(nfs).build());
        assertOk(b);
        assertEquals(3, b.getKeyLocationsCount());
        assertEquals(List.of(1, 0, 1), b.getKeyLocationsList().stream().map(CacheLocationVector::getLocationsCount).toList());
        assertEquals(prefix(a, id, 100).get(0), b.getKeyLocations(0).getLocations(0));
        // a selector of a backend the instance does not use finds nothing
        GetCacheLocationsByBackendResponse mc = a.byBackend(GetCacheLocationsByBackendRequest.newBuilder().setInstanceId(id)
                .setQueryType(QueryType.QT_BATCH_GET).addAllBlockKeys(list(100)).addBackendSelectors(nfs.toBuilder()
                        .setBackendType(StorageType.ST_MOONCAKE)).build());
        assertEquals(0, mc.getKeyLocations(0).getLocationsCount());
        // token mode: 384 tokens at block_size 128 give 3 entries
        GetCacheLocationsByBackendResponse tok = a.byBackend(GetCacheLocationsByBackendRequest.newBuilder().setInstanceId(id)
                .setQueryType(QueryType.QT_BATCH_GET).addAllTokenIds(LongStream.range(0, 384).boxed().toList())
                .addBackendSelectors(nfs).build());
        assertOk(tok);
        assertEquals(3, tok.getKeyLocationsCount());

        assertNotOk(a.byBackend(GetCacheLocationsByBackendRequest.newBuilder().setInstanceId(id)                // 124
                .setQueryType(QueryType.QT_BATCH_GET).addAllBlockKeys(list(100)).build()));
        assertNotOk(a.byBackend(GetCacheLocationsByBackendRequest.newBuilder().setInstanceId(uid("x"))
                .setQueryType(QueryType.QT_BATCH_GET).addAllBlockKeys(list(100)).addBackendSelectors(nfs).build()));
    }

    @ParameterizedTest
    @EnumSource(Transport.class)
    void item125_minReplicaCount(Transport t) {
        MetaApi a = api(t);
        String id = newInstance(a, "replica");
        long[] k = rndKeys(3);
        write(a, id, k[0], k[1]);
        StartWriteCacheResponse one = a.start(startReq(id, k).setMinReplicaCount(1).build());
        assertOk(one);
        assertEquals(offset(2), one.getBlockMask());
        assertOk(finish(a, id, one.getWriteSessionId(), bools(true)));
        StartWriteCacheResponse two = a.start(startReq(id, k[0], k[1], k[2]).setMinReplicaCount(2).build());
        assertOk(two);
        assertEquals(offset(0), two.getBlockMask());
        assertEquals(3, two.getLocationsCount());
        assertOk(finish(a, id, two.getWriteSessionId(), bools(true, true, true)));
        assertEquals(2, runtime.registry().instance(id).index.get(k[0]).size());
        // now every key has two replicas: nothing new for min_replica_count 2
        StartWriteCacheResponse again = a.start(startReq(id, k).setMinReplicaCount(2).build());
        assertEquals(offset(3), again.getBlockMask());
        assertEquals(0, again.getLocationsCount());
        assertOk(finish(a, id, again.getWriteSessionId(), bools()));
        assertEquals(3, prefix(a, id, k).size());
    }

    @ParameterizedTest
    @EnumSource(Transport.class)
    void defaultQueryType(Transport t) {
        MetaApi a = api(t);
        String id = registered(a, reg(uid("dqt")).setDefaultQueryType(QueryType.QT_BATCH_GET));
        long k = rndKey();
        write(a, id, k);
        GetCacheLocationResponse r = a.location(GetCacheLocationRequest.newBuilder().setInstanceId(id)
                .addBlockKeys(rndKey()).addBlockKeys(k).build());
        assertOk(r);
        assertEquals(2, r.getLocationsCount());
        assertEquals(QueryType.QT_BATCH_GET, a.info(GetInstanceInfoRequest.newBuilder().setInstanceId(id).build())
                .getInstanceInfo().getDefaultQueryType());
        // an explicit query type still wins over the default
        assertEquals(0, a.location(locReq(id, QueryType.QT_PREFIX_MATCH, rndKey(), k).build()).getLocationsCount());
        // B.5: the Mamba prefix match is phase 2: UNSUPPORTED until implemented
        assertCode(ErrorCode.UNSUPPORTED, a.location(locReq(id, QueryType.QT_PREFIX_MATCH_WITH_MAMBA, k).build()));
        if (t == Transport.HTTP) {
            // the older field name of B.5 (upstream 0298d710 called it query_type) is accepted too
            String other = uid("dqt-old");
            JsonNode old = MetaApi.tree(MetaApi.post("registerInstance", "{\"instance_group\":\"default\",\"instance_id\":\""
                    + other + "\",\"block_size\":4,\"model_deployment\":{\"model_name\":\"m\",\"dtype\":\"d\"},"
                    + "\"location_spec_infos\":[{\"name\":\"tp0\",\"size\":1}],\"query_type\":\"QT_BATCH_GET\"}"));
            assertEquals("OK", old.path("header").path("status").path("code").asText());
            assertEquals(QueryType.QT_BATCH_GET, a.info(GetInstanceInfoRequest.newBuilder().setInstanceId(other).build())
                    .getInstanceInfo().getDefaultQueryType());
        }
    }

    @Test
    void item128_finishOverGrpcWithLocations() {
        MetaApi g = api(Transport.GRPC);
        String id = newInstance(g, "cpp");
        long[] k = rndKeys(2);
        StartWriteCacheResponse s = start(g, id, k);
        FinishWriteCacheRequest.Builder f = FinishWriteCacheRequest.newBuilder().setTraceId("t").setInstanceId(id)
                .setWriteSessionId(s.getWriteSessionId()).setSuccessBlocks(bools(true, true));
        for (CacheLocation l : s.getLocationsList()) {
            f.addLocations(l.toBuilder().setType(StorageType.ST_UNSPECIFIED).setSpecSize(-1));
        }
        assertOk(g.finish(f.build()));
        assertEquals(s.getLocationsList(), prefix(g, id, k));
        // the same over HTTP JSON
        StartWriteCacheResponse s2 = start(api(Transport.HTTP), id, rndKeys(1));
        String raw = MetaApi.post("finishWriteCache", "{\"instance_id\":\"" + id + "\",\"write_session_id\":\""
                + s2.getWriteSessionId() + "\",\"success_blocks\":{\"offset\":1},\"locations\":[{\"type\":\"ST_UNSPECIFIED\","
                + "\"spec_size\":-1,\"location_specs\":[{\"name\":\"tp0\",\"uri\":\"x\"}]}]}");
        assertEquals("OK", MetaApi.tree(raw).path("header").path("status").path("code").asText());
    }
}
