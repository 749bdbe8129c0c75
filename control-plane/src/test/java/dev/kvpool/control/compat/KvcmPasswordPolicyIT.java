package dev.kvpool.control.compat;

import static dev.kvpool.control.testing.Api.admin;
import static io.restassured.RestAssured.given;
import static org.hamcrest.Matchers.*;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.kvpool.api.proto.admin.AccountRole;
import dev.kvpool.api.proto.admin.AddAccountRequest;
import dev.kvpool.api.proto.admin.AdminServiceGrpc;
import dev.kvpool.api.proto.admin.DeleteAccountRequest;
import dev.kvpool.api.proto.admin.ErrorCode;
import dev.kvpool.api.proto.admin.ListAccountRequest;
import dev.kvpool.control.account.AccountService;
import dev.kvpool.control.testing.Api;
import io.grpc.ManagedChannel;
import io.grpc.ManagedChannelBuilder;
import io.grpc.Metadata;
import io.grpc.stub.MetadataUtils;
import io.quarkus.test.junit.QuarkusTest;
import io.quarkus.test.junit.QuarkusTestProfile;
import io.quarkus.test.junit.TestProfile;
import io.restassured.response.ValidatableResponse;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * {@code kvpool.control.accounts.password-policy=kvcm}: a KVCM admin script's account sequence (AddAccount with a
 * short or empty password, ListAccount, DeleteAccount) works unchanged over HTTP and gRPC, and REST follows the same
 * rule. The length bound stays. The default (strict) refusal is asserted in KvcmAdminRoutesIT.
 */
@QuarkusTest
@TestProfile(KvcmPasswordPolicyIT.KvcmPasswords.class)
class KvcmPasswordPolicyIT {
    public static class KvcmPasswords implements QuarkusTestProfile {
        @Override
        public Map<String, String> getConfigOverrides() {
            return Map.of("kvpool.control.accounts.password-policy", "kvcm");
        }
    }

    static ValidatableResponse kvcm(String rpc, String body) {
        return admin().body(body).post("/api/" + rpc).then().statusCode(200);
    }

    static int signIn(String user, String password) {
        return given().contentType("application/json").body(Map.of("user", user, "password", password))
                .post("/api/v1/tokens").then().extract().statusCode();
    }

    @Test
    void kvcmScriptsShortPasswordsOverHttp() {
        kvcm("addAccount", "{\"trace_id\":\"t\",\"user_name\":\"kvs-short\",\"password\":\"123\",\"role\":0}")
                .body("header.status.code", is("OK"));
        kvcm("addAccount", "{\"trace_id\":\"t\",\"user_name\":\"kvs-empty\",\"password\":\"\",\"role\":1}")
                .body("header.status.code", is("OK"));
        kvcm("addAccount", "{\"trace_id\":\"t\",\"user_name\":\"kvs-absent\"}").body("header.status.code", is("OK"));
        // still bounded, still a name
        kvcm("addAccount", "{\"trace_id\":\"t\",\"user_name\":\"kvs-long\",\"password\":\""
                + "x".repeat(AccountService.MAX_PASSWORD + 1) + "\"}").body("header.status.code", is("INVALID_ARGUMENT"));
        kvcm("addAccount", "{\"trace_id\":\"t\",\"user_name\":\"\",\"password\":\"x\"}")
                .body("header.status.code", is("INVALID_ARGUMENT"));
        kvcm("listAccount", "{\"trace_id\":\"t\"}")
                .body("accounts.find { it.user_name == 'kvs-short' }.role", is("ROLE_USER"))
                .body("accounts.find { it.user_name == 'kvs-empty' }.role", is("ROLE_ADMIN"))
                .body(not(containsString("pbkdf2")));
        // stored as a salted hash all the same: the right password signs in, a wrong one does not
        assertEquals(200, signIn("kvs-short", "123"));
        assertEquals(401, signIn("kvs-short", "124"));
        assertEquals(200, signIn("kvs-empty", ""));
        assertEquals(401, signIn("kvs-empty", "x"));
        kvcm("deleteAccount", "{\"trace_id\":\"t\",\"user_name\":\"kvs-short\"}").body("header.status.code", is("OK"));
        assertEquals(401, signIn("kvs-short", "123"));

        // REST follows the same rule, for creation and for a password change
        admin().body(Map.of("name", "rest-short", "password", "ab", "role", "operator")).post("/api/v1/accounts")
                .then().statusCode(201);
        admin().header("If-Match", "1").body(Map.of("password", "c")).put("/api/v1/accounts/rest-short").then()
                .statusCode(200);
        assertEquals(200, signIn("rest-short", "c"));
        admin().body(Map.of("name", "rest-long", "password", "y".repeat(AccountService.MAX_PASSWORD + 1),
                "role", "operator")).post("/api/v1/accounts").then().statusCode(400).body("field", is("password"));
    }

    @Test
    void kvcmScriptsShortPasswordsOverGrpc() throws Exception {
        ManagedChannel ch = ManagedChannelBuilder.forAddress("localhost", 16491).usePlaintext().build();
        try {
            Metadata md = new Metadata();
            md.put(Metadata.Key.of("authorization", Metadata.ASCII_STRING_MARSHALLER), "Bearer " + Api.adminToken());
            var stub = AdminServiceGrpc.newBlockingStub(ch).withInterceptors(MetadataUtils.newAttachHeadersInterceptor(md));
            var r = stub.addAccount(AddAccountRequest.newBuilder().setTraceId("g").setUserName("grpc-short")
                    .setPassword("pw").setRole(AccountRole.ROLE_USER).build());
            assertEquals(ErrorCode.OK, r.getHeader().getStatus().getCode(), r.toString());
            r = stub.addAccount(AddAccountRequest.newBuilder().setTraceId("g").setUserName("grpc-empty").build());
            assertEquals(ErrorCode.OK, r.getHeader().getStatus().getCode(), r.toString());
            r = stub.addAccount(AddAccountRequest.newBuilder().setTraceId("g").setUserName("grpc-short").setPassword("pw")
                    .build());
            // KVCM answers 3 here; KVPool names the cause (as for every duplicate)
            assertEquals(ErrorCode.DUPLICATE_ENTITY, r.getHeader().getStatus().getCode(), r.toString());
            var names = stub.listAccount(ListAccountRequest.newBuilder().build()).getAccountsList().stream()
                    .map(a -> a.getUserName()).toList();
            assertTrue(names.containsAll(java.util.List.of("grpc-short", "grpc-empty")), names.toString());
            assertEquals(200, signIn("grpc-short", "pw"));
            r = stub.deleteAccount(DeleteAccountRequest.newBuilder().setUserName("grpc-short").build());
            assertEquals(ErrorCode.OK, r.getHeader().getStatus().getCode(), r.toString());
        } finally {
            ch.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
        }
    }
}
