package dev.kvpool.control;

import static dev.kvpool.control.testing.Api.admin;
import static io.restassured.RestAssured.given;
import static org.hamcrest.Matchers.is;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.node.TextNode;
import dev.kvpool.control.testing.Api;
import io.quarkus.test.junit.QuarkusTest;
import io.quarkus.test.junit.QuarkusTestProfile;
import io.quarkus.test.junit.TestProfile;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * {@code kvpool.control.snapshot.include-accounts=true}: KVCM's snapshot carries the accounts with their hashes (admin
 * only), so GenConfigSnapshot → LoadConfigSnapshot brings a deleted account back with its password. The REST snapshot
 * the metadata plane reads never carries them.
 */
@QuarkusTest
@TestProfile(SnapshotAccountsIT.IncludeAccounts.class)
class SnapshotAccountsIT {
    public static class IncludeAccounts implements QuarkusTestProfile {
        @Override
        public Map<String, String> getConfigOverrides() {
            return Map.of("kvpool.control.snapshot.include-accounts", "true");
        }
    }

    @Test
    void accountsRoundTripOnlyWhenAsked() {
        admin().body(Map.of("name", "snap-user", "password", "Snap-Passw0rd-1", "role", "operator"))
                .post("/api/v1/accounts").then().statusCode(201);
        String snap = admin().body("{\"trace_id\":\"t\"}").post("/api/genConfigSnapshot").then().statusCode(200)
                .body("header.status.code", is("OK")).extract().path("config_snapshot");
        assertTrue(snap.contains("\"user_name\":\"snap-user\"") && snap.contains("pbkdf2-sha256$"), snap);
        admin().delete("/api/v1/accounts/snap-user").then().statusCode(204);
        admin().body("{\"trace_id\":\"t\",\"config_snapshot\":" + TextNode.valueOf(snap) + "}")
                .post("/api/loadConfigSnapshot").then().statusCode(200).body("header.status.code", is("OK"));
        given().contentType("application/json").body(Map.of("user", "snap-user", "password", "Snap-Passw0rd-1"))
                .post("/api/v1/tokens").then().statusCode(200).body("role", is("operator"));
        // an operator may not take it; the REST snapshot never carries accounts
        String op = Api.token("snap-user", "Snap-Passw0rd-1");
        Api.as(op).body("{}").post("/api/genConfigSnapshot").then().statusCode(403);
        String rest = admin().get("/api/v1/config/snapshot").then().statusCode(200).extract().asString();
        assertTrue(!rest.contains("pbkdf2") && !rest.contains("snap-user"), rest);
        // a hash naming 2^31 iterations would make every login of that account take hours: refused at load
        String slow = snap.replace("\"accounts\":[", "\"accounts\":[{\"user_name\":\"slow\",\"role\":\"ROLE_USER\","
                + "\"password_hash\":\"pbkdf2-sha256$2147483647$AAAAAAAAAAAAAAAAAAAAAA==$"
                + "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\"},");
        admin().body("{\"trace_id\":\"t\",\"config_snapshot\":" + TextNode.valueOf(slow) + "}")
                .post("/api/loadConfigSnapshot").then().statusCode(200).body("header.status.code", is("INVALID_ARGUMENT"));
        admin().get("/api/v1/accounts/slow").then().statusCode(404);
        List<String> names = admin().get("/api/v1/accounts").then().extract().path("items.name");
        assertTrue(names.contains("snap-user"), names.toString());
    }
}
