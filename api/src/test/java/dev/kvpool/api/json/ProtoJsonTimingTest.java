package dev.kvpool.api.json;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.protobuf.util.JsonFormat;
import dev.kvpool.api.proto.meta.CacheLocation;
import dev.kvpool.api.proto.meta.GetCacheLocationRequest;
import dev.kvpool.api.proto.meta.GetCacheLocationResponse;
import dev.kvpool.api.proto.meta.LocationSpec;
import dev.kvpool.api.proto.meta.StorageType;
import java.nio.charset.StandardCharsets;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * Speed checks. The 1024-location comparison only prints numbers (timings on shared CI machines are noise);
 * the 64 MiB body has a deliberately loose bound that still catches an accidental per-element slow path.
 */
class ProtoJsonTimingTest {

    private static final JsonFormat.Parser JSON_FORMAT_PARSER = JsonFormat.parser().ignoringUnknownFields();

    static GetCacheLocationResponse responseWith1024Locations() {
        GetCacheLocationResponse.Builder b = GetCacheLocationResponse.newBuilder()
                .setHeader(ProtoJsonTest.header(dev.kvpool.api.proto.meta.ErrorCode.OK,
                        "Cache locations retrieved successfully", "t_1738723200123456"));
        for (int i = 0; i < 1024; i++) {
            CacheLocation.Builder loc = CacheLocation.newBuilder().setType(StorageType.ST_NFS).setSpecSize(2);
            for (String spec : new String[] {"tp0", "tp1"}) {
                loc.addLocationSpecs(LocationSpec.newBuilder().setName(spec)
                        .setUri("file://nfs_01/tmp/nfs/instance1/" + spec + "/" + Long.toHexString(i * 0x9E3779B97F4A7C15L)
                                + "?blkid=" + (i % 8) + "&size=1024"));
            }
            b.addLocations(loc);
        }
        return b.build();
    }

    @Test
    void microTimingAgainstJsonFormat() throws Exception {
        GetCacheLocationResponse m = responseWith1024Locations();
        byte[] json = ProtoJson.print(m);
        String jsonText = new String(json, StandardCharsets.UTF_8);
        int warm = 300;
        int runs = 300;
        for (int i = 0; i < warm; i++) {
            ProtoJson.print(m);
            ProtoJsonParityTest.JSON_FORMAT.print(m).getBytes(StandardCharsets.UTF_8);
            ProtoJson.merge(json, GetCacheLocationResponse.newBuilder()).build();
            JsonFormat.Parser p = JSON_FORMAT_PARSER;
            GetCacheLocationResponse.Builder b = GetCacheLocationResponse.newBuilder();
            p.merge(jsonText, b);
        }
        long t0 = System.nanoTime();
        for (int i = 0; i < runs; i++) {
            ProtoJson.print(m);
        }
        long t1 = System.nanoTime();
        for (int i = 0; i < runs; i++) {
            ProtoJsonParityTest.JSON_FORMAT.print(m).getBytes(StandardCharsets.UTF_8);
        }
        long t2 = System.nanoTime();
        for (int i = 0; i < runs; i++) {
            ProtoJson.merge(json, GetCacheLocationResponse.newBuilder()).build();
        }
        long t3 = System.nanoTime();
        for (int i = 0; i < runs; i++) {
            GetCacheLocationResponse.Builder b = GetCacheLocationResponse.newBuilder();
            JSON_FORMAT_PARSER.merge(new String(json, StandardCharsets.UTF_8), b);
            b.build();
        }
        long t4 = System.nanoTime();
        System.out.printf("[ProtoJson timing] GetCacheLocationResponse, 1024 locations, %d bytes of JSON%n", json.length);
        System.out.printf("[ProtoJson timing]   print: ProtoJson %8.1f us/op   JsonFormat %8.1f us/op   (x%.1f)%n",
                us(t1 - t0, runs), us(t2 - t1, runs), (double) (t2 - t1) / (t1 - t0));
        System.out.printf("[ProtoJson timing]   parse: ProtoJson %8.1f us/op   JsonFormat %8.1f us/op   (x%.1f)%n",
                us(t3 - t2, runs), us(t4 - t3, runs), (double) (t4 - t3) / (t3 - t2));
    }

    @Test
    void eightMillionTokenIdsParseQuickly() {
        int n = 8 * 1024 * 1024;
        long[] tokens = new long[n];
        byte[] body = tokenRequest(tokens, new Random(1));
        // warm the JIT on a smaller body first: the bound is about the steady state, not the interpreter
        byte[] small = tokenRequest(new long[n / 8], new Random(2));
        for (int i = 0; i < 5; i++) {
            ProtoJson.merge(small, GetCacheLocationRequest.newBuilder()).build();
        }

        long best = Long.MAX_VALUE;
        GetCacheLocationRequest r = null;
        for (int i = 0; i < 3; i++) {
            long t0 = System.nanoTime();
            r = ProtoJson.merge(body, GetCacheLocationRequest.newBuilder()).build();
            best = Math.min(best, System.nanoTime() - t0);
        }
        assertEquals(n, r.getTokenIdsCount());
        for (int i = 0; i < n; i += 9973) {
            assertEquals(tokens[i], r.getTokenIds(i));
        }
        long t0 = System.nanoTime();
        byte[] printed = ProtoJson.print(r);
        long printNs = System.nanoTime() - t0;
        System.out.printf("[ProtoJson timing] %d token ids, %.1f MiB body: parse %d ms (best of 3), print %d ms (%.1f MiB)%n",
                n, body.length / 1048576.0, best / 1_000_000, printNs / 1_000_000, printed.length / 1048576.0);
        assertTrue(best < 2_000_000_000L, "parse took " + best / 1_000_000 + " ms");
    }

    /** A vLLM-style GetCacheLocation body carrying {@code tokens.length} random token ids (filled in). */
    private static byte[] tokenRequest(long[] tokens, Random rnd) {
        StringBuilder sb = new StringBuilder(tokens.length * 8)
                .append("{\"trace_id\":\"t\",\"instance_id\":\"i\",\"block_keys\":[],\"token_ids\":[");
        for (int i = 0; i < tokens.length; i++) {
            tokens[i] = rnd.nextInt(152_000);
            if (i > 0) {
                sb.append(',');
            }
            sb.append(tokens[i]);
        }
        return sb.append("],\"query_type\":\"QT_PREFIX_MATCH\"}").toString().getBytes(StandardCharsets.UTF_8);
    }

    private static double us(long nanos, int runs) {
        return nanos / 1000.0 / runs;
    }
}
