package dev.kvpool.control.testing;

import static io.restassured.RestAssured.given;

import io.restassured.http.ContentType;
import io.restassured.specification.RequestSpecification;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/** REST helpers: tokens per account (cached), authenticated request specs. */
public final class Api {
    public static final String ADMIN = "admin";
    public static final String ADMIN_PASSWORD = "Boot-Strap-Passw0rd1";
    private static final Map<String, String> TOKENS = new ConcurrentHashMap<>();

    private Api() {
    }

    public static String token(String user, String password) {
        // keyed by the running application too: a test profile restarts it on a cleaned database with new signing
        // keys, and a token cached from the previous start would be refused (unknown kid)
        Object app = io.quarkus.runtime.Application.currentApplication();
        return TOKENS.computeIfAbsent(System.identityHashCode(app) + "\u0000" + user + "\u0000" + password, k -> given().contentType(ContentType.JSON)
                .body(Map.of("user", user, "password", password)).post("/api/v1/tokens")
                .then().statusCode(200).extract().path("token"));
    }

    /** Forgets cached tokens (after a test removed the key that signed them). */
    public static void forgetTokens() {
        TOKENS.clear();
    }

    public static String adminToken() {
        return token(ADMIN, ADMIN_PASSWORD);
    }

    public static RequestSpecification as(String token) {
        return given().contentType(ContentType.JSON).header("Authorization", "Bearer " + token);
    }

    public static RequestSpecification admin() {
        return as(adminToken());
    }

    /** Creates an account as admin when missing and returns its token. */
    public static String account(String name, String role, String... groups) {
        String pw = "Zq-Secret-Pass-9";
        admin().body(Map.of("name", name, "password", pw, "role", role, "groups", java.util.List.of(groups)))
                .post("/api/v1/accounts");
        return token(name, pw);
    }

    public static void nfsStorage(String name) {
        admin().body(Map.of("name", name, "type", "nfs", "spec", Map.of("root_path", "/mnt/" + name + "/",
                "key_count_per_file", 8))).post("/api/v1/storages");
    }

    public static void group(String name, String storage) {
        admin().body(Map.of("name", name, "quotaBytes", 1_000_000_000L, "storageCandidates", java.util.List.of(storage)))
                .post("/api/v1/instance-groups");
    }

    public static Map<String, Object> instanceBody(String id, String group) {
        return Map.of("instanceId", id, "group", group, "blockSize", 16,
                "modelDeployment", Map.of("model_name", "m", "dtype", "bf16"),
                "locationSpecInfos", java.util.List.of(Map.of("name", "tp0", "size", 4096)));
    }
}
