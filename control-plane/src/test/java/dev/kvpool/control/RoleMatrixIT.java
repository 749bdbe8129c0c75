package dev.kvpool.control;

import static io.restassured.RestAssured.given;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.kvpool.control.kvcm.KvcmAdmin;
import dev.kvpool.control.testing.Api;
import io.quarkus.test.junit.QuarkusTest;
import io.restassured.specification.RequestSpecification;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Each role × each route → expected outcome. The REST routes are enumerated from the live OpenAPI document and the
 * KVCM routes from the route table, so a route added without an entry here (and so without a reviewed access rule)
 * fails this test.
 */
@QuarkusTest
class RoleMatrixIT {
    /** What a role gets: let through (any status but 401/403), 401, or 403. */
    enum O { OK, UNAUTH, FORBID }

    static final O Y = O.OK, U = O.UNAUTH, F = O.FORBID;

    /** route → expected for {anonymous, tenant, operator, admin}. */
    static final Map<String, O[]> REST = new TreeMap<>(Map.ofEntries(
            Map.entry("POST /api/v1/tokens", new O[] {Y, Y, Y, Y}),
            Map.entry("GET /api/v1/auth/public-key", new O[] {Y, Y, Y, Y}),
            Map.entry("GET /api/v1/auth/jwks", new O[] {Y, Y, Y, Y}),
            Map.entry("GET /.well-known/jwks.json", new O[] {Y, Y, Y, Y}),
            Map.entry("POST /api/v1/auth/keys/rotate", new O[] {U, F, F, Y}),
            // run with fresh tokens (see freshAs): it revokes the token it is called with
            Map.entry("POST /api/v1/auth/sign-out", new O[] {U, Y, Y, Y}),
            Map.entry("GET /api/v1/auth/revocations", new O[] {U, F, Y, Y}),
            Map.entry("GET /api/v1/storages", new O[] {U, F, Y, Y}),
            Map.entry("POST /api/v1/storages", new O[] {U, F, Y, Y}),
            Map.entry("GET /api/v1/storages/{name}", new O[] {U, F, Y, Y}),
            Map.entry("PUT /api/v1/storages/{name}", new O[] {U, F, Y, Y}),
            Map.entry("DELETE /api/v1/storages/{name}", new O[] {U, F, Y, Y}),
            Map.entry("GET /api/v1/instance-groups", new O[] {U, Y, Y, Y}),
            Map.entry("POST /api/v1/instance-groups", new O[] {U, F, Y, Y}),
            Map.entry("GET /api/v1/instance-groups/{name}", new O[] {U, Y, Y, Y}),
            Map.entry("PUT /api/v1/instance-groups/{name}", new O[] {U, F, Y, Y}),
            Map.entry("DELETE /api/v1/instance-groups/{name}", new O[] {U, F, Y, Y}),
            Map.entry("GET /api/v1/instances", new O[] {U, Y, Y, Y}),
            Map.entry("POST /api/v1/instances", new O[] {U, F, Y, Y}),
            Map.entry("GET /api/v1/instances/{id}", new O[] {U, Y, Y, Y}),
            Map.entry("DELETE /api/v1/instances/{id}", new O[] {U, F, Y, Y}),
            Map.entry("GET /api/v1/accounts", new O[] {U, F, F, Y}),
            Map.entry("POST /api/v1/accounts", new O[] {U, F, F, Y}),
            Map.entry("GET /api/v1/accounts/{name}", new O[] {U, F, F, Y}),
            Map.entry("PUT /api/v1/accounts/{name}", new O[] {U, F, F, Y}),
            Map.entry("DELETE /api/v1/accounts/{name}", new O[] {U, F, F, Y}),
            Map.entry("GET /api/v1/usage", new O[] {U, Y, Y, Y}),
            Map.entry("POST /api/v1/usage", new O[] {U, F, Y, Y}),
            Map.entry("GET /api/v1/usage/series", new O[] {U, Y, Y, Y}),
            Map.entry("POST /api/v1/stats", new O[] {U, F, Y, Y}),
            Map.entry("GET /api/v1/stats/series", new O[] {U, Y, Y, Y}),
            Map.entry("GET /api/v1/stats/summary", new O[] {U, Y, Y, Y}),
            Map.entry("GET /api/v1/services", new O[] {U, Y, Y, Y}),
            Map.entry("GET /api/v1/leader", new O[] {U, F, Y, Y}),
            Map.entry("POST /api/v1/services/heartbeat", new O[] {U, F, Y, Y}),
            Map.entry("GET /api/v1/config/snapshot", new O[] {U, F, Y, Y}),
            // forwarded to the metadata plane, which checks the token itself (what-if: admin and operator; an
            // instance and its block keys: also a tenant on its own groups); here only a token is required
            Map.entry("GET /api/v1/meta/{path}", new O[] {U, Y, Y, Y}),
            Map.entry("POST /api/v1/meta/{path}", new O[] {U, Y, Y, Y}),
            Map.entry("PUT /api/v1/meta/{path}", new O[] {U, Y, Y, Y}),
            Map.entry("DELETE /api/v1/meta/{path}", new O[] {U, Y, Y, Y})));

    /** KVCM admin RPC → access rule reviewed for it. */
    static final Map<String, KvcmAdmin.Access> KVCM = new TreeMap<>(Map.ofEntries(
            Map.entry("addStorage", KvcmAdmin.Access.OPERATOR), Map.entry("enableStorage", KvcmAdmin.Access.OPERATOR),
            Map.entry("disableStorage", KvcmAdmin.Access.OPERATOR), Map.entry("removeStorage", KvcmAdmin.Access.OPERATOR),
            Map.entry("updateStorage", KvcmAdmin.Access.OPERATOR), Map.entry("listStorage", KvcmAdmin.Access.OPERATOR),
            Map.entry("createInstanceGroup", KvcmAdmin.Access.OPERATOR),
            Map.entry("updateInstanceGroup", KvcmAdmin.Access.OPERATOR),
            Map.entry("removeInstanceGroup", KvcmAdmin.Access.OPERATOR),
            Map.entry("getInstanceGroup", KvcmAdmin.Access.ANY), Map.entry("listInstanceGroup", KvcmAdmin.Access.ANY),
            Map.entry("getCacheMeta", KvcmAdmin.Access.OPERATOR), Map.entry("removeCache", KvcmAdmin.Access.OPERATOR),
            Map.entry("registerInstance", KvcmAdmin.Access.OPERATOR),
            Map.entry("removeInstance", KvcmAdmin.Access.OPERATOR),
            Map.entry("getInstanceInfo", KvcmAdmin.Access.ANY), Map.entry("listInstanceInfo", KvcmAdmin.Access.ANY),
            Map.entry("addAccount", KvcmAdmin.Access.ADMIN), Map.entry("deleteAccount", KvcmAdmin.Access.ADMIN),
            Map.entry("listAccount", KvcmAdmin.Access.ADMIN), Map.entry("genConfigSnapshot", KvcmAdmin.Access.ADMIN),
            Map.entry("loadConfigSnapshot", KvcmAdmin.Access.ADMIN), Map.entry("getMetrics", KvcmAdmin.Access.ANY),
            Map.entry("checkHealth", KvcmAdmin.Access.PUBLIC),
            Map.entry("getManagerClusterInfo", KvcmAdmin.Access.PUBLIC),
            Map.entry("leaderDemote", KvcmAdmin.Access.OPERATOR),
            Map.entry("getLeaderElectorConfig", KvcmAdmin.Access.ANY),
            Map.entry("updateLeaderElectorConfig", KvcmAdmin.Access.OPERATOR),
            Map.entry("updateLogger", KvcmAdmin.Access.OPERATOR)));

    static String tenant, operator, admin;

    /** Once, inside the first test (RestAssured's port is set for test methods, not for static @BeforeAll). */
    @BeforeEach
    void fixtures() {
        if (admin != null) {
            return;
        }
        Api.nfsStorage("rm_nfs");
        Api.group("rm-group", "rm_nfs");
        Api.group("rm-other", "rm_nfs");
        Api.admin().body(Api.instanceBody("rm-inst", "rm-group")).post("/api/v1/instances");
        Api.admin().body(Api.instanceBody("rm-other-inst", "rm-other")).post("/api/v1/instances");
        tenant = Api.account("rm-tenant", "tenant", "rm-group");
        operator = Api.account("rm-operator", "operator");
        admin = Api.adminToken();
    }

    static RequestSpecification as(int who) {
        RequestSpecification s = given().contentType("application/json");
        return switch (who) {
            case 1 -> s.header("Authorization", "Bearer " + tenant);
            case 2 -> s.header("Authorization", "Bearer " + operator);
            case 3 -> s.header("Authorization", "Bearer " + admin);
            default -> s;
        };
    }

    static final String[] WHO = {"anonymous", "tenant", "operator", "admin"};

    /** Like {@link #as} with a token issued for this call only (sign-out revokes it). */
    static RequestSpecification freshAs(int who) {
        if (who == 0) {
            return as(0);
        }
        String user = who == 1 ? "rm-tenant" : who == 2 ? "rm-operator" : Api.ADMIN;
        String pw = who == 3 ? Api.ADMIN_PASSWORD : "Zq-Secret-Pass-9";
        String t = given().contentType("application/json").body(Map.of("user", user, "password", pw))
                .post("/api/v1/tokens").then().statusCode(200).extract().path("token");
        return given().contentType("application/json").header("Authorization", "Bearer " + t);
    }

    @Test
    void everyRestRouteHasAReviewedRule() {
        Map<String, Object> paths = given().get("/q/openapi?format=json").then().statusCode(200).extract().path("paths");
        TreeSet<String> live = new TreeSet<>();
        paths.forEach((p, ops) -> ((Map<?, ?>) ops).keySet().forEach(m -> {
            String method = m.toString().toUpperCase();
            if (List.of("GET", "POST", "PUT", "DELETE", "PATCH").contains(method)) {
                live.add(method + " " + p);
            }
        }));
        assertEquals(REST.keySet(), live, "every REST route needs an entry in RoleMatrixIT.REST (and a @RolesAllowed "
                + "or @PermitAll that matches it)");
        List<String> wrong = new ArrayList<>();
        for (String route : live) {
            String method = route.substring(0, route.indexOf(' '));
            String path = route.substring(route.indexOf(' ') + 1);
            // reads use the tenant's own objects; writes target absent objects so they change nothing
            boolean read = method.equals("GET");
            path = path.replace("/instance-groups/{name}", read ? "/instance-groups/rm-group" : "/instance-groups/rm-ghost")
                    .replace("/instances/{id}", read ? "/instances/rm-inst" : "/instances/rm-ghost")
                    .replace("{name}", "rm-ghost").replace("{path}", "whatif/runs");
            for (int who = 0; who < 4; who++) {
                int status = (route.endsWith("/auth/sign-out") ? freshAs(who) : as(who)).body("{}")
                        .request(method, path).statusCode();
                O got = status == 401 ? O.UNAUTH : status == 403 ? O.FORBID : O.OK;
                if (got != REST.get(route)[who]) {
                    wrong.add(route + " as " + WHO[who] + ": expected " + REST.get(route)[who] + ", got " + status);
                }
            }
        }
        assertTrue(wrong.isEmpty(), String.join("\n", wrong));
    }

    @Test
    void tenantsSeeOnlyTheirGroups() {
        as(1).get("/api/v1/instance-groups/rm-other").then().statusCode(403);
        as(1).get("/api/v1/instances/rm-other-inst").then().statusCode(403);
        List<String> groups = as(1).get("/api/v1/instance-groups").then().statusCode(200).extract().path("items.name");
        assertEquals(List.of("rm-group"), groups);
        List<String> insts = as(1).get("/api/v1/instances").then().statusCode(200).extract().path("items.instanceId");
        assertEquals(List.of("rm-inst"), insts);
        as(1).queryParam("group", "rm-other").get("/api/v1/usage").then().statusCode(403);
        as(1).queryParam("group", "rm-other").get("/api/v1/usage/series").then().statusCode(403);
        as(1).queryParam("group", "rm-other").get("/api/v1/stats/series").then().statusCode(403);
        as(1).queryParam("instance", "rm-other-inst").get("/api/v1/stats/series").then().statusCode(403);
        List<String> summarized = as(1).get("/api/v1/stats/summary").then().statusCode(200).extract().path("groups.group");
        assertEquals(List.of("rm-group"), summarized);
        List<String> summarizedInsts = as(1).get("/api/v1/stats/summary").then().statusCode(200).extract()
                .path("instances.instance");
        assertEquals(List.of("rm-inst"), summarizedInsts);
        as(1).body("{\"trace_id\":\"t\",\"name\":\"rm-other\"}").post("/api/getInstanceGroup").then().statusCode(200)
                .body("header.status.code", org.hamcrest.Matchers.is("INVALID_ARGUMENT"));
        List<String> kvcmInsts = as(1).body("{\"trace_id\":\"t\",\"instance_group_name\":\"\"}")
                .post("/api/listInstanceInfo").then().statusCode(200).extract().path("instance_info.instance_id");
        assertEquals(List.of("rm-inst"), kvcmInsts);
    }

    @Test
    void everyKvcmRouteHasAReviewedRule() {
        assertEquals(KVCM.keySet(), new TreeSet<>(KvcmAdmin.RPCS.keySet()),
                "every KVCM admin route needs an entry in RoleMatrixIT.KVCM");
        List<String> wrong = new ArrayList<>();
        for (var e : KVCM.entrySet()) {
            assertEquals(e.getValue(), KvcmAdmin.RPCS.get(e.getKey()).access(), e.getKey());
            O[] expected = switch (e.getValue()) {
                case PUBLIC -> new O[] {Y, Y, Y, Y};
                case ANY -> new O[] {U, Y, Y, Y};
                case OPERATOR -> new O[] {U, F, Y, Y};
                case ADMIN -> new O[] {U, F, F, Y};
            };
            for (int who = 0; who < 4; who++) {
                int status = as(who).body("{}").post("/api/" + e.getKey()).statusCode();
                O got = status == 401 ? O.UNAUTH : status == 403 ? O.FORBID : O.OK;
                if (got != expected[who] || (got == O.OK && status != 200)) {
                    wrong.add(e.getKey() + " as " + WHO[who] + ": expected " + expected[who] + ", got " + status);
                }
            }
        }
        assertTrue(wrong.isEmpty(), String.join("\n", wrong));
    }

    @Test
    void refusalsAreProblemDocuments() {
        as(0).get("/api/v1/storages").then().statusCode(401).contentType("application/problem+json");
        as(1).get("/api/v1/storages").then().statusCode(403).contentType("application/problem+json");
    }

    @Test
    void operationalEndpointsArePublic() {
        given().get("/q/health/ready").then().statusCode(200);
        given().get("/q/metrics").then().statusCode(200);
    }
}
