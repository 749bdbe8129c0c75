package dev.kvpool.meta.api;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.kvpool.api.proto.meta.*;
import dev.kvpool.meta.support.KvcmTestBase;
import dev.kvpool.meta.support.KvcmTestProfile;
import dev.kvpool.meta.support.MetaApi;
import dev.kvpool.meta.support.Transport;
import io.quarkus.test.junit.QuarkusTest;
import io.quarkus.test.junit.TestProfile;
import java.time.Duration;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.stream.LongStream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/** §5.6 Remove and trim (items 81–85), over HTTP and gRPC. */
@QuarkusTest
@TestProfile(KvcmTestProfile.class)
class RemoveTrimTest extends KvcmTestBase {
    private static final Map<Transport, String> SHARED = new EnumMap<>(Transport.class);

    private String inst(MetaApi a) {
        return SHARED.computeIfAbsent(a.transport, t -> newInstance(a, "remove"));
    }

    private static CommonResponse remove(MetaApi a, String id, long... keys) {
        return a.remove(RemoveCacheRequest.newBuilder().setTraceId(trace()).setInstanceId(id).addAllBlockKeys(list(keys)).build());
    }

    private static CommonResponse trim(MetaApi a, String id, TrimStrategy s, int begin, int end) {
        return a.trim(TrimCacheRequest.newBuilder().setTraceId(trace()).setInstanceId(id).setStrategy(s)
                .setBeginTimestamp(begin).setEndTimestamp(end).build());
    }

    @ParameterizedTest
    @EnumSource(Transport.class)
    void items81to83_remove(Transport t) {
        MetaApi a = api(t);
        String id = inst(a);
        long[] k = rndKeys(3);
        write(a, id, k);
        assertOk(remove(a, id, k[0]));                                                           // 81
        assertEquals(0, prefix(a, id, k[0]).size());
        assertEquals(0, prefix(a, id, k).size());
        assertEquals(2, prefix(a, id, k[1], k[2]).size());
        // once the delete ran the key is gone and writable again
        await("removed key purged", Duration.ofSeconds(10), () -> statuses(a, id, k[0]).equals(List.of("CLS_NOT_FOUND")));
        assertEquals(1, start(a, id, k[0]).getLocationsCount());

        assertOk(remove(a, id, rndKeys(4)));                                                     // 82

        // an open write is removed too: its finish can no longer make it readable
        long w = rndKey();
        StartWriteCacheResponse open = start(a, id, w);
        assertOk(remove(a, id, w));
        finish(a, id, open.getWriteSessionId(), bools(true));
        assertEquals(0, prefix(a, id, w).size());

        // KVPool honours the mask on remove: masked keys stay
        long[] m = rndKeys(3);
        write(a, id, m);
        assertOk(a.remove(RemoveCacheRequest.newBuilder().setInstanceId(id).addAllBlockKeys(list(m))
                .setBlockMask(bools(true, false, true)).build()));
        assertEquals(List.of(1, 0, 1), List.of(prefix(a, id, m[0]).size(), prefix(a, id, m[1]).size(),
                prefix(a, id, m[2]).size()));

        String tokInst = registered(a, reg(uid("rmtok-" + t.name().toLowerCase()), 4, "tp0", 64));     // 83
        List<Long> tokens = LongStream.range(100, 112).boxed().toList();
        StartWriteCacheResponse s = a.start(StartWriteCacheRequest.newBuilder().setInstanceId(tokInst)
                .addAllTokenIds(tokens).setWriteTimeoutSeconds(30).build());
        assertEquals(3, s.getLocationsCount());
        assertOk(finish(a, tokInst, s.getWriteSessionId(), bools(true, true, true)));
        assertOk(a.remove(RemoveCacheRequest.newBuilder().setInstanceId(tokInst).addAllTokenIds(tokens.subList(0, 8)).build()));
        GetCacheLocationResponse q = a.location(GetCacheLocationRequest.newBuilder().setInstanceId(tokInst)
                .setQueryType(QueryType.QT_BATCH_GET).addAllTokenIds(tokens).build());
        assertEquals(List.of("", "", s.getLocations(2).getLocationSpecs(0).getUri()),
                q.getLocationsList().stream().map(l -> l.getLocationSpecs(0).getUri()).toList());
    }

    @ParameterizedTest
    @EnumSource(Transport.class)
    void items84and85_trim(Transport t) {
        MetaApi a = api(t);
        String id = newInstance(a, "trim");
        long[] k = rndKeys(150); // more than one page
        for (int i = 0; i < k.length; i += 50) {
            write(a, id, java.util.Arrays.copyOfRange(k, i, i + 50));
        }
        long open = rndKey();
        start(a, id, open);
        assertEquals(150, batchHits(a, id, k));
        assertOk(trim(a, id, TrimStrategy.TS_REMOVE_ALL_CACHE, 0, 0));                              // 84
        assertEquals(0, batchHits(a, id, k));
        assertEquals(0, prefix(a, id, k).size());
        await("trimmed keys purged", Duration.ofSeconds(10),
                () -> runtime.registry().instance(id).index.keyCount() == 1);
        assertEquals(List.of("CLS_WRITING"), statuses(a, id, open), "a write in flight is left to its session");

        assertCode(ErrorCode.INVALID_ARGUMENT, trim(a, id, TrimStrategy.TS_UNSPECIFIED, 0, 0));       // 85

        // KVPool implements the other two strategies (OK instead of the baseline's UNSUPPORTED)
        long[] m = rndKeys(4);
        write(a, id, m);
        assertOk(trim(a, id, TrimStrategy.TS_REMOVE_ALL_META, 0, 0));
        assertEquals(0, batchHits(a, id, m));
        await("metadata purged", Duration.ofSeconds(10), () -> runtime.registry().instance(id).index.keyCount() == 1);
        assertEquals(List.of("CLS_WRITING"), statuses(a, id, open), "a write in flight is left to its session");
        assertEquals(4, start(a, id, m).getLocationsCount());

        String ts = newInstance(a, "trimts");
        long[] w = rndKeys(3);
        write(a, id, w); // on the first instance: another instance's trim must not touch it
        write(a, ts, w);
        int now = (int) (System.currentTimeMillis() / 1000);
        assertOk(trim(a, ts, TrimStrategy.TS_TIMESTAMP, now - 3600, now - 1800)); // nothing written then
        assertEquals(3, batchHits(a, ts, w));
        assertOk(trim(a, ts, TrimStrategy.TS_TIMESTAMP, now - 60, now + 60));
        assertEquals(0, batchHits(a, ts, w));
        assertEquals(3, batchHits(a, id, w));
        assertCode(ErrorCode.INVALID_ARGUMENT, trim(a, ts, TrimStrategy.TS_TIMESTAMP, now, now));
    }

    private static int batchHits(MetaApi a, String id, long... keys) {
        int n = 0;
        for (CacheLocation l : batch(a, id, keys)) {
            if (!l.getLocationSpecs(0).getUri().isEmpty()) {
                n++;
            }
        }
        GetCacheLocationLenResponse len = a.locationLen(GetCacheLocationLenRequest.newBuilder().setInstanceId(id)
                .setQueryType(QueryType.QT_BATCH_GET).addAllBlockKeys(list(keys)).build());
        assertOk(len);
        assertEquals(n, len.getCacheLocationLen());
        assertTrue(n <= keys.length);
        return n;
    }
}
