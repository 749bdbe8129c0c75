package dev.kvpool.meta.debug;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.kvpool.api.auth.BearerToken;
import dev.kvpool.api.auth.JwtTokens;
import dev.kvpool.api.proto.debug.ClearFaultsRequest;
import dev.kvpool.api.proto.debug.CommonResponse;
import dev.kvpool.api.proto.debug.DebugService;
import dev.kvpool.api.proto.debug.ErrorCode;
import dev.kvpool.api.proto.debug.InjectFaultRequest;
import dev.kvpool.meta.support.MetaApi;
import dev.kvpool.meta.support.TestDirs;
import io.grpc.Metadata;
import io.quarkus.grpc.GrpcClient;
import io.quarkus.grpc.GrpcClientUtils;
import io.quarkus.test.junit.QuarkusTest;
import io.quarkus.test.junit.QuarkusTestProfile;
import io.quarkus.test.junit.TestProfile;
import java.net.http.HttpResponse;
import java.security.KeyPair;
import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * With tokens enforced, the debug service needs an admin or operator token on both transports (KVCM's later upstream
 * puts bearer tokens on its debug HTTP, §B.11): without one HTTP answers 401, a tenant token 403.
 */
@QuarkusTest
@TestProfile(DebugTokensTest.Profile.class)
class DebugTokensTest {
    static final KeyPair KEYS = JwtTokens.generateKeyPair();

    public static class Profile implements QuarkusTestProfile {
        @Override
        public Map<String, String> getConfigOverrides() {
            return Map.of("kvpool.meta.auth.public-key", JwtTokens.encodePublicKey(KEYS.getPublic()),
                    "kvpool.meta.startup-config", TestDirs.repoFile("config/kvcm-default-startup.json"),
                    "kvpool.data-dir", TestDirs.freshDataDir("debug-tokens"),
                    "kvpool.meta.debug.enabled", "true");
        }
    }

    static String token(String role, Set<String> groups) {
        long now = Instant.now().getEpochSecond();
        return JwtTokens.issue(KEYS.getPrivate(), "test-key", "kvpool", new BearerToken.Claims("u-" + role, role, groups,
                now, now + Duration.ofHours(1).toSeconds(), java.util.UUID.randomUUID().toString()));
    }

    static final String ADMIN = token(BearerToken.ADMIN, Set.of()), OPERATOR = token(BearerToken.OPERATOR, Set.of()),
            TENANT = token(BearerToken.TENANT, Set.of("default"));
    static final String INJECT = "{\"api_name\":\"StartWriteCache\"}";

    @GrpcClient("debug")
    DebugService debug;

    @AfterEach
    void clear() {
        FaultTable.PROCESS.clear();
    }

    private DebugService as(String token) {
        Metadata m = new Metadata();
        if (token != null) {
            m.put(Metadata.Key.of("authorization", Metadata.ASCII_STRING_MARSHALLER), "Bearer " + token);
        }
        return GrpcClientUtils.attachHeaders(debug, m);
    }

    @Test
    void http() throws Exception {
        HttpResponse<String> none = DebugHttp.post("injectFault", INJECT);
        assertEquals(401, none.statusCode());
        assertTrue(none.headers().firstValue("WWW-Authenticate").orElse("").startsWith("Bearer"));
        assertEquals(401, DebugHttp.send("POST", "injectFault", INJECT, "not-a-token").statusCode());
        assertEquals(403, DebugHttp.send("POST", "injectFault", INJECT, TENANT).statusCode());
        assertTrue(FaultTable.PROCESS.snapshot().isEmpty(), "a refused call stores nothing");
        HttpResponse<String> op = DebugHttp.send("POST", "injectFault", INJECT, OPERATOR);
        assertEquals(200, op.statusCode());
        assertEquals("OK", MetaApi.tree(op.body()).path("header").path("status").path("code").asText());
        assertEquals(Set.of("StartWriteCache"), FaultTable.PROCESS.snapshot().keySet());
        assertEquals(200, DebugHttp.send("POST", "clearFaults", "{}", ADMIN).statusCode());
        assertTrue(FaultTable.PROCESS.snapshot().isEmpty());
    }

    @Test
    void grpc() {
        InjectFaultRequest q = InjectFaultRequest.newBuilder().setApiName("FinishWriteCache").build();
        for (String t : new String[]{null, "not-a-token", TENANT}) {
            CommonResponse r = as(t).injectFault(q).await().atMost(Duration.ofSeconds(30));
            assertEquals(ErrorCode.INVALID_ARGUMENT, r.getHeader().getStatus().getCode(), String.valueOf(t));
        }
        assertTrue(FaultTable.PROCESS.snapshot().isEmpty());
        assertEquals(ErrorCode.OK, as(ADMIN).injectFault(q).await().atMost(Duration.ofSeconds(30))
                .getHeader().getStatus().getCode());
        assertEquals(Set.of("FinishWriteCache"), FaultTable.PROCESS.snapshot().keySet());
        assertEquals(ErrorCode.OK, as(OPERATOR).clearFaults(ClearFaultsRequest.getDefaultInstance())
                .await().atMost(Duration.ofSeconds(30)).getHeader().getStatus().getCode());
    }
}
