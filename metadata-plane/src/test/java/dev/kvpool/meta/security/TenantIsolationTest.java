package dev.kvpool.meta.security;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.google.protobuf.Message;
import dev.kvpool.api.json.ProtoJson;
import dev.kvpool.api.proto.meta.*;
import dev.kvpool.meta.runtime.MetaRuntime;
import dev.kvpool.meta.support.MetaApi;
import io.grpc.Metadata;
import io.quarkus.grpc.GrpcClient;
import io.quarkus.grpc.GrpcClientUtils;
import io.quarkus.test.junit.QuarkusTest;
import io.quarkus.test.junit.TestProfile;
import jakarta.inject.Inject;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.Function;
import org.junit.jupiter.api.Test;

/**
 * Two tenants on one storage, each with a token of its own group: every cross-tenant path through instance ids,
 * spec names, URIs, write sessions, removes and trims, over HTTP and gRPC. None reaches the other's blocks, files
 * or quota; no name a client sends becomes a path outside the storage root or outside its own instance's directory.
 */
@QuarkusTest
@TestProfile(TenantsProfile.class)
class TenantIsolationTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final HttpClient HTTP = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(Duration.ofSeconds(5)).build();
    private static final Duration T = Duration.ofSeconds(20);

    @Inject
    MetaRuntime runtime;
    @GrpcClient("meta")
    MetaService grpc;

    enum Via { HTTP, GRPC }

    /** One call as the holder of {@code token}, answered as a message whatever the transport. */
    @SuppressWarnings("unchecked")
    private <R extends Message> R call(Via via, String token, String rpc, Message req, Message.Builder answer) {
        if (via == Via.HTTP) {
            HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(MetaApi.base() + "/api/" + rpc)).timeout(T)
                    .header("Content-Type", "application/json")
                    .POST(HttpRequest.BodyPublishers.ofByteArray(ProtoJson.print(req)));
            if (token != null) {
                b.header("Authorization", "Bearer " + token);
            }
            try {
                HttpResponse<String> r = HTTP.send(b.build(), HttpResponse.BodyHandlers.ofString());
                assertEquals(200, r.statusCode(), rpc + ": " + r.body());
                return (R) ProtoJson.merge(r.body(), answer).build();
            } catch (IOException | InterruptedException e) {
                throw new AssertionError(rpc + " failed: " + e, e);
            }
        }
        Metadata m = new Metadata();
        if (token != null) {
            m.put(Metadata.Key.of("authorization", Metadata.ASCII_STRING_MARSHALLER), "Bearer " + token);
        }
        MetaService s = GrpcClientUtils.attachHeaders(grpc, m);
        Function<Message, io.smallrye.mutiny.Uni<? extends Message>> f = switch (rpc) {
            case "registerInstance" -> q -> s.registerInstance((RegisterInstanceRequest) q);
            case "getInstanceInfo" -> q -> s.getInstanceInfo((GetInstanceInfoRequest) q);
            case "getCacheMeta" -> q -> s.getCacheMeta((GetCacheMetaRequest) q);
            case "getCacheLocation" -> q -> s.getCacheLocation((GetCacheLocationRequest) q);
            case "startWriteCache" -> q -> s.startWriteCache((StartWriteCacheRequest) q);
            case "finishWriteCache" -> q -> s.finishWriteCache((FinishWriteCacheRequest) q);
            case "removeCache" -> q -> s.removeCache((RemoveCacheRequest) q);
            case "trimCache" -> q -> s.trimCache((TrimCacheRequest) q);
            case "getCacheLocationLen" -> q -> s.getCacheLocationLen((GetCacheLocationLenRequest) q);
            case "getCacheLocationsByBackend" -> q -> s.getCacheLocationsByBackend((GetCacheLocationsByBackendRequest) q);
            default -> throw new IllegalArgumentException(rpc);
        };
        return (R) f.apply(req).await().atMost(T);
    }

    private static Status status(Message m) {
        return ((CommonResponseHeader) m.getField(m.getDescriptorForType().findFieldByName("header"))).getStatus();
    }

    private static RegisterInstanceRequest.Builder reg(String group, String id) {
        return RegisterInstanceRequest.newBuilder().setTraceId("t").setInstanceGroup(group).setInstanceId(id)
                .setBlockSize(4).setModelDeployment(ModelDeployment.newBuilder().setModelName("m").setDtype("bf16"))
                .addLocationSpecInfos(LocationSpecInfo.newBuilder().setName("tp0").setSize(4096));
    }

    private static final long[] KEYS = {11, 12, 13, 14, 15, 16, 17, 18};

    private static List<Long> keys() {
        List<Long> l = new ArrayList<>();
        for (long k : KEYS) {
            l.add(k);
        }
        return l;
    }

    /** Every file and directory under the box (the storage root's parent), relative. */
    private static Set<String> tree() throws IOException {
        try (var s = Files.walk(TenantsProfile.BOX)) {
            return s.map(p -> TenantsProfile.BOX.relativize(p).toString()).collect(java.util.stream.Collectors.toCollection(TreeSet::new));
        }
    }

    /** Writes both phases and fills the slots with {@code fill} as an engine would; returns the URIs. */
    private List<String> write(Via via, String token, String instance, byte fill) throws IOException {
        StartWriteCacheResponse s = call(via, token, "startWriteCache", StartWriteCacheRequest.newBuilder().setTraceId("t")
                .setInstanceId(instance).addAllBlockKeys(keys()).setWriteTimeoutSeconds(30).build(),
                StartWriteCacheResponse.newBuilder());
        assertEquals(ErrorCode.OK, s.getHeader().getStatus().getCode(), s.toString());
        List<String> uris = new ArrayList<>();
        BoolMasksType.Builder ok = BoolMasksType.newBuilder();
        for (CacheLocation l : s.getLocationsList()) {
            for (LocationSpec spec : l.getLocationSpecsList()) {
                uris.add(spec.getUri());
                writeSlot(spec.getUri(), fill);
            }
            ok.addValues(true);
        }
        CommonResponse f = call(via, token, "finishWriteCache", FinishWriteCacheRequest.newBuilder().setTraceId("t")
                .setInstanceId(instance).setWriteSessionId(s.getWriteSessionId())
                .setSuccessBlocks(BlockMask.newBuilder().setBoolMasks(ok)).build(), CommonResponse.newBuilder());
        assertEquals(ErrorCode.OK, f.getHeader().getStatus().getCode(), f.toString());
        return uris;
    }

    /** file://nfs_t/<root>/<inst>/<spec>/slab_x?blkid=i&size=n */
    private static Path pathOf(String uri) {
        String rest = uri.substring("file://nfs_t".length());
        return Path.of(rest.substring(0, rest.indexOf('?')));
    }

    private static void writeSlot(String uri, byte fill) throws IOException {
        String q = uri.substring(uri.indexOf('?') + 1);
        long blkid = 0, size = 0;
        for (String kv : q.split("&")) {
            String[] p = kv.split("=");
            if (p[0].equals("blkid")) {
                blkid = Long.parseLong(p[1]);
            } else if (p[0].equals("size")) {
                size = Long.parseLong(p[1]);
            }
        }
        Path p = pathOf(uri);
        Files.createDirectories(p.getParent());
        try (var ch = java.nio.channels.FileChannel.open(p, java.nio.file.StandardOpenOption.CREATE,
                java.nio.file.StandardOpenOption.WRITE)) {
            byte[] b = new byte[(int) size];
            java.util.Arrays.fill(b, fill);
            ch.write(java.nio.ByteBuffer.wrap(b), blkid * size);
        }
    }

    private static byte[] readSlot(String uri) throws IOException {
        String q = uri.substring(uri.indexOf('?') + 1);
        long blkid = Long.parseLong(q.replaceAll(".*blkid=(\\d+).*", "$1")), size = Long.parseLong(q.replaceAll(".*size=(\\d+).*", "$1"));
        byte[] all = Files.readAllBytes(pathOf(uri));
        return java.util.Arrays.copyOfRange(all, (int) (blkid * size), (int) ((blkid + 1) * size));
    }

    private int served(Via via, String token, String instance) {
        GetCacheLocationResponse r = call(via, token, "getCacheLocation", GetCacheLocationRequest.newBuilder()
                .setTraceId("t").setInstanceId(instance).setQueryType(QueryType.QT_BATCH_GET).addAllBlockKeys(keys())
                .build(), GetCacheLocationResponse.newBuilder());
        assertEquals(ErrorCode.OK, r.getHeader().getStatus().getCode(), r.toString());
        return (int) r.getLocationsList().stream().filter(l -> !l.getLocationSpecs(0).getUri().isEmpty()).count();
    }

    static final String[] HOSTILE_NAMES = {"..", ".", "../team-b-inst", "a/../../b", "/etc", "a/b", "a\\b", "x\u0000y",
            "%2e%2e", "{b}", "a b", "line\nbreak", "ä", "-rf", ".hidden", "a?b", "a#b", "a:b", "x".repeat(129), ""};

    @Test
    void hostileNamesAreRefusedAndNeverBecomePaths() throws IOException {
        Set<String> before = tree();
        for (Via via : Via.values()) {
            for (String bad : HOSTILE_NAMES) {
                RegisterInstanceResponse r = call(via, TenantsProfile.TENANT_A, "registerInstance",
                        reg("team-a", bad).build(), RegisterInstanceResponse.newBuilder());
                assertEquals(ErrorCode.INVALID_ARGUMENT, r.getHeader().getStatus().getCode(), via + " id '" + bad + "': " + r);
                assertTrue(r.getHeader().getStatus().getMessage().startsWith("instance_id"), r.toString());
                RegisterInstanceResponse s = call(via, TenantsProfile.TENANT_A, "registerInstance", reg("team-a", "a-spec-" + via)
                        .setLocationSpecInfos(0, LocationSpecInfo.newBuilder().setName(bad).setSize(64)).build(),
                        RegisterInstanceResponse.newBuilder());
                assertEquals(ErrorCode.INVALID_ARGUMENT, s.getHeader().getStatus().getCode(), via + " spec '" + bad + "': " + s);
                RegisterInstanceResponse g = call(via, TenantsProfile.ADMIN, "registerInstance", reg(bad.isEmpty() ? "x/y" : bad,
                        "a-group-" + via).build(), RegisterInstanceResponse.newBuilder());
                assertEquals(ErrorCode.INVALID_ARGUMENT, g.getHeader().getStatus().getCode(), via + " group '" + bad + "': " + g);
            }
        }
        assertEquals(before, tree(), "nothing created anywhere by refused names");
        for (var inst : runtime.registry().instances()) {
            assertTrue(dev.kvpool.api.naming.Identifiers.valid(dev.kvpool.api.naming.Identifiers.Kind.INSTANCE, inst.id), inst.id);
        }
    }

    @Test
    void aTenantNeverReachesAnotherTenantsBlocksFilesOrQuota() throws IOException {
        for (Via via : Via.values()) {
            String a = "a-inst-" + via, b = "b-inst-" + via;
            String A = TenantsProfile.TENANT_A, B = TenantsProfile.TENANT_B;
            assertEquals(ErrorCode.OK, status(call(via, B, "registerInstance", reg("team-b", b).build(),
                    RegisterInstanceResponse.newBuilder())).getCode());
            assertEquals(ErrorCode.OK, status(call(via, A, "registerInstance", reg("team-a", a).build(),
                    RegisterInstanceResponse.newBuilder())).getCode());
            List<String> bUris = write(via, B, b, (byte) 'B');
            long bUsage = runtime.ledger().usage("team-b").total();
            byte[][] bBytes = new byte[bUris.size()][];
            for (int i = 0; i < bUris.size(); i++) {
                bBytes[i] = readSlot(bUris.get(i));
            }
            // B's open session, whose id A might learn
            StartWriteCacheResponse bOpen = call(via, B, "startWriteCache", StartWriteCacheRequest.newBuilder()
                    .setTraceId("t").setInstanceId(b).addBlockKeys(99).setWriteTimeoutSeconds(60).build(),
                    StartWriteCacheResponse.newBuilder());
            assertEquals(ErrorCode.OK, bOpen.getHeader().getStatus().getCode());

            // every call on B's instance with A's token is refused
            List<Message> onB = List.of(
                    GetInstanceInfoRequest.newBuilder().setTraceId("t").setInstanceId(b).build(),
                    GetCacheMetaRequest.newBuilder().setTraceId("t").setInstanceId(b).addAllBlockKeys(keys()).build(),
                    GetCacheLocationRequest.newBuilder().setTraceId("t").setInstanceId(b).setQueryType(QueryType.QT_BATCH_GET)
                            .addAllBlockKeys(keys()).build(),
                    StartWriteCacheRequest.newBuilder().setTraceId("t").setInstanceId(b).addBlockKeys(77).setWriteTimeoutSeconds(30).build(),
                    FinishWriteCacheRequest.newBuilder().setTraceId("t").setInstanceId(b).setWriteSessionId(bOpen.getWriteSessionId())
                            .setSuccessBlocks(BlockMask.newBuilder().setOffset(0)).build(),
                    RemoveCacheRequest.newBuilder().setTraceId("t").setInstanceId(b).addAllBlockKeys(keys()).build(),
                    TrimCacheRequest.newBuilder().setTraceId("t").setInstanceId(b).setStrategy(TrimStrategy.TS_REMOVE_ALL_CACHE).build(),
                    GetCacheLocationLenRequest.newBuilder().setTraceId("t").setInstanceId(b).setQueryType(QueryType.QT_BATCH_GET)
                            .addAllBlockKeys(keys()).build(),
                    GetCacheLocationsByBackendRequest.newBuilder().setTraceId("t").setInstanceId(b)
                            .setQueryType(QueryType.QT_BATCH_GET).addAllBlockKeys(keys()).build());
            for (Message q : onB) {
                String rpc = Character.toLowerCase(q.getDescriptorForType().getName().charAt(0))
                        + q.getDescriptorForType().getName().substring(1).replace("Request", "");
                Message.Builder answer = answerOf(rpc);
                Status st = status(call(via, A, rpc, q, answer));
                assertEquals(ErrorCode.INVALID_ARGUMENT, st.getCode(), via + " " + rpc + " on B's instance: " + st);
                assertTrue(st.getMessage().startsWith("permission denied"), st.getMessage());
            }
            // A re-registering B's id into its own group is refused too (the existing instance's group decides)
            Status rereg = status(call(via, A, "registerInstance", reg("team-a", b).build(), RegisterInstanceResponse.newBuilder()));
            assertEquals(ErrorCode.INVALID_ARGUMENT, rereg.getCode(), rereg.toString());
            // B's session id used on A's own instance: not A's session
            Status stolen = status(call(via, A, "finishWriteCache", FinishWriteCacheRequest.newBuilder().setTraceId("t")
                    .setInstanceId(a).setWriteSessionId(bOpen.getWriteSessionId())
                    .setSuccessBlocks(BlockMask.newBuilder().setOffset(1)).build(), CommonResponse.newBuilder()));
            assertNotEquals(ErrorCode.OK, stolen.getCode(), stolen.toString());

            // A writes the same keys in its own instance, then removes and trims them: B is untouched
            List<String> aUris = write(via, A, a, (byte) 'A');
            String aDir = TenantsProfile.ROOT.resolve(a) + "/";
            for (String u : aUris) {
                assertTrue(pathOf(u).normalize().toString().startsWith(aDir), "A's location outside A's directory: " + u);
            }
            for (String u : bUris) {
                assertFalse(aUris.contains(u));
            }
            assertEquals(ErrorCode.OK, status(call(via, A, "removeCache", RemoveCacheRequest.newBuilder().setTraceId("t")
                    .setInstanceId(a).addAllBlockKeys(keys()).build(), CommonResponse.newBuilder())).getCode());
            assertEquals(ErrorCode.OK, status(call(via, A, "trimCache", TrimCacheRequest.newBuilder().setTraceId("t")
                    .setInstanceId(a).setStrategy(TrimStrategy.TS_REMOVE_ALL_CACHE).build(), CommonResponse.newBuilder())).getCode());
            runtime.deletions().drain();
            assertEquals(0, served(via, A, a));
            assertEquals(KEYS.length, served(via, B, b), "B's blocks still served");
            for (int i = 0; i < bUris.size(); i++) {
                assertArrayEquals(bBytes[i], readSlot(bUris.get(i)), "B's bytes unchanged: " + bUris.get(i));
            }
            assertEquals(bUsage + 4096, runtime.ledger().usage("team-b").total(), "B's usage: its blocks and its open session");
            assertEquals(ErrorCode.OK, status(call(via, B, "finishWriteCache", FinishWriteCacheRequest.newBuilder()
                    .setTraceId("t").setInstanceId(b).setWriteSessionId(bOpen.getWriteSessionId())
                    .setSuccessBlocks(BlockMask.newBuilder().setOffset(0)).build(), CommonResponse.newBuilder())).getCode(),
                    "B's session survived A's attempts");
        }
    }

    private static Message.Builder answerOf(String rpc) {
        return switch (rpc) {
            case "getInstanceInfo" -> GetInstanceInfoResponse.newBuilder();
            case "getCacheMeta" -> GetCacheMetaResponse.newBuilder();
            case "getCacheLocation" -> GetCacheLocationResponse.newBuilder();
            case "startWriteCache" -> StartWriteCacheResponse.newBuilder();
            case "getCacheLocationLen" -> GetCacheLocationLenResponse.newBuilder();
            case "getCacheLocationsByBackend" -> GetCacheLocationsByBackendResponse.newBuilder();
            default -> CommonResponse.newBuilder();
        };
    }
}
