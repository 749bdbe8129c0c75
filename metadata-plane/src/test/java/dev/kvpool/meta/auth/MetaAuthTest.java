package dev.kvpool.meta.auth;

import static io.restassured.RestAssured.given;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.kvpool.api.auth.BearerToken;
import dev.kvpool.api.auth.JwtTokens;
import dev.kvpool.api.proto.meta.ErrorCode;
import dev.kvpool.api.proto.meta.GetCacheLocationRequest;
import dev.kvpool.api.proto.meta.GetClusterInfoRequest;
import dev.kvpool.api.proto.meta.LocationSpecInfo;
import dev.kvpool.api.proto.meta.MetaService;
import dev.kvpool.api.proto.meta.ModelDeployment;
import dev.kvpool.api.proto.meta.QueryType;
import dev.kvpool.api.proto.meta.RegisterInstanceRequest;
import dev.kvpool.meta.support.TestDirs;
import io.grpc.Metadata;
import io.quarkus.grpc.GrpcClient;
import io.quarkus.grpc.GrpcClientUtils;
import io.quarkus.test.junit.QuarkusTest;
import io.quarkus.test.junit.QuarkusTestProfile;
import io.quarkus.test.junit.TestProfile;
import java.security.KeyPair;
import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * Tokens on the metadata plane with a configured public key (kvpool.meta.auth.public-key): KVCM meta calls over
 * HTTP and gRPC, and the REST routes. Without the control plane no group allows anonymous calls.
 */
@QuarkusTest
@TestProfile(MetaAuthTest.Profile.class)
class MetaAuthTest {
    static final KeyPair KEYS = JwtTokens.generateKeyPair();

    public static class Profile implements QuarkusTestProfile {
        @Override
        public Map<String, String> getConfigOverrides() {
            return Map.of("kvpool.meta.auth.public-key", JwtTokens.encodePublicKey(KEYS.getPublic()),
                    "kvpool.data-dir", TestDirs.freshDataDir("auth"));
        }
    }

    @GrpcClient("meta")
    MetaService grpc;

    static String token(String role, Set<String> groups, Duration ttl) {
        long now = Instant.now().getEpochSecond();
        return JwtTokens.issue(KEYS.getPrivate(), "test-key", "kvpool", new BearerToken.Claims("u-" + role, role, groups,
                now, now + ttl.toSeconds(), java.util.UUID.randomUUID().toString()));
    }

    static final String ADMIN = token(BearerToken.ADMIN, Set.of(), Duration.ofHours(1)),
            OPERATOR = token(BearerToken.OPERATOR, Set.of(), Duration.ofHours(1)),
            TENANT_DEFAULT = token(BearerToken.TENANT, Set.of("default"), Duration.ofHours(1)),
            TENANT_OTHER = token(BearerToken.TENANT, Set.of("other"), Duration.ofHours(1)),
            EXPIRED = token(BearerToken.ADMIN, Set.of(), Duration.ofSeconds(-5));

    private MetaService as(String token) {
        Metadata m = new Metadata();
        if (token != null) {
            m.put(Metadata.Key.of("authorization", Metadata.ASCII_STRING_MARSHALLER), "Bearer " + token);
        }
        return GrpcClientUtils.attachHeaders(grpc, m);
    }

    private static String http(String rpc, String body, String token) {
        var r = given().header("Content-Type", "application/json");
        if (token != null) {
            r = r.header("Authorization", "Bearer " + token);
        }
        return r.body(body).post("/api/" + rpc).then().statusCode(200).extract().asString();
    }

    private static final String INST = "auth-i1";

    private static RegisterInstanceRequest reg() {
        return RegisterInstanceRequest.newBuilder().setTraceId("t").setInstanceGroup("default").setInstanceId(INST)
                .setBlockSize(4).setModelDeployment(ModelDeployment.newBuilder().setModelName("m").setDtype("bf16"))
                .addLocationSpecInfos(LocationSpecInfo.newBuilder().setName("tp0").setSize(64)).build();
    }

    private static GetCacheLocationRequest query() {
        return GetCacheLocationRequest.newBuilder().setTraceId("t").setInstanceId(INST)
                .setQueryType(QueryType.QT_BATCH_GET).addBlockKeys(1).build();
    }

    @Test
    void grpcCallsNeedATokenOfTheRightGroup() {
        Duration d = Duration.ofSeconds(10);
        assertEquals(ErrorCode.INVALID_ARGUMENT, as(null).registerInstance(reg()).await().atMost(d).getHeader()
                .getStatus().getCode(), "no token, no anonymous group");
        assertEquals(ErrorCode.OK, as(TENANT_DEFAULT).registerInstance(reg()).await().atMost(d).getHeader().getStatus()
                .getCode());
        var refused = as(TENANT_OTHER).getCacheLocation(query()).await().atMost(d).getHeader();
        assertEquals(ErrorCode.INVALID_ARGUMENT, refused.getStatus().getCode());
        assertTrue(refused.getStatus().getMessage().startsWith("permission denied"), refused.toString());
        assertEquals(ErrorCode.INVALID_ARGUMENT, as(EXPIRED).getCacheLocation(query()).await().atMost(d).getHeader()
                .getStatus().getCode(), "expired token");
        assertEquals(ErrorCode.OK, as(TENANT_DEFAULT).getCacheLocation(query()).await().atMost(d).getHeader()
                .getStatus().getCode());
        assertEquals(ErrorCode.OK, as(OPERATOR).getCacheLocation(query()).await().atMost(d).getHeader().getStatus()
                .getCode());
        assertEquals(ErrorCode.OK, as(null).getClusterInfo(GetClusterInfoRequest.newBuilder().setTraceId("t").build())
                .await().atMost(d).getHeader().getStatus().getCode(), "no instance, nothing to protect");
    }

    @Test
    void httpCallsAndRestRoutes() {
        String body = "{\"trace_id\":\"t\",\"instance_id\":\"" + INST + "\",\"query_type\":\"QT_BATCH_GET\",\"block_keys\":[1]}";
        http("registerInstance", dev.kvpool.api.json.ProtoJson.printToString(reg()), ADMIN);
        String anon = given().header("Content-Type", "application/json").body(body).post("/api/getCacheLocation")
                .then().statusCode(200).header("WWW-Authenticate", "Bearer realm=\"kvpool\"").extract().asString();
        assertTrue(anon.contains("\"INVALID_ARGUMENT\"") && anon.contains("unauthenticated"), anon);
        String other = http("getCacheLocation", body, TENANT_OTHER);
        assertTrue(other.contains("\"INVALID_ARGUMENT\"") && other.contains("permission denied"), other);
        String forged = http("getCacheLocation", body, TENANT_DEFAULT.substring(0, TENANT_DEFAULT.length() - 4) + "AAAA");
        assertTrue(forged.contains("\"INVALID_ARGUMENT\""), forged);
        assertTrue(http("getCacheLocation", body, TENANT_DEFAULT).contains("\"OK\""));

        given().get("/api/v1/groups").then().statusCode(401);
        given().header("Authorization", "Bearer " + TENANT_DEFAULT).get("/api/v1/groups").then().statusCode(403);
        given().header("Authorization", "Bearer " + OPERATOR).get("/api/v1/groups").then().statusCode(200);
        given().header("Authorization", "Bearer " + ADMIN).get("/api/v1/instances/" + INST).then().statusCode(200);
        given().get("/q/health/ready").then().statusCode(200);
        given().get("/q/metrics").then().statusCode(200);
    }
}
