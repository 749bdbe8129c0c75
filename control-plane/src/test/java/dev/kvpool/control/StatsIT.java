package dev.kvpool.control;

import static dev.kvpool.control.testing.Api.admin;
import static org.hamcrest.Matchers.hasItem;
import static org.hamcrest.Matchers.is;
import static org.hamcrest.Matchers.notNullValue;
import static org.hamcrest.Matchers.nullValue;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.kvpool.control.retention.Retention;
import dev.kvpool.control.testing.Api;
import io.agroal.api.AgroalDataSource;
import io.quarkus.test.junit.QuarkusTest;
import io.restassured.path.json.JsonPath;
import jakarta.inject.Inject;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The console's time series: stats reports accumulate into minute buckets, series and summary numbers are exact, a
 * tenant reads only its groups, hostile reports are refused naming the field (and change nothing), the roll-up into
 * hour buckets preserves sums, and usage samples are thinned to the last per hour.
 */
@QuarkusTest
class StatsIT {
    @Inject
    AgroalDataSource db;
    @Inject
    Retention retention;

    static String tenant, operator;
    /** A five-minute boundary 20 minutes ago: the reports below land in its first two minutes. */
    static long base;

    @BeforeEach
    void fixtures() {
        if (tenant != null) {
            return;
        }
        Api.nfsStorage("st_nfs");
        Api.group("st-g", "st_nfs");
        Api.group("st-other", "st_nfs");
        admin().body(Api.instanceBody("st-i1", "st-g")).post("/api/v1/instances").then().statusCode(201);
        admin().body(Api.instanceBody("st-i2", "st-g")).post("/api/v1/instances").then().statusCode(201);
        admin().body(Api.instanceBody("st-o1", "st-other")).post("/api/v1/instances").then().statusCode(201);
        tenant = Api.account("st-tenant", "tenant", "st-g");
        operator = Api.account("st-operator", "operator");
        base = Math.floorDiv(Instant.now().getEpochSecond(), 300L) * 300 - 1200;
        // minute base: two replicas report i1, one reports i2; minute base+60: i1 once more, i2 writes only
        report("st-r1", base + 30, List.of(
                entry("st-i1", "st-g", 10, 100, 40, 60, Map.of("water_level", 5L, "ttl", 0L)),
                entry("st-i2", "st-g", 1, 10, 10, 0, Map.of()),
                entry("st-o1", "st-other", 7, 70, 7, 0, Map.of("key_count", 3L))))
                .then().statusCode(202).body("accepted", is(3));
        Api.as(operator).body(body("st-r2", base + 50, List.of(
                entry("st-i1", "st-g", 5, 50, 10, 0, Map.of("ttl", 2L))))).post("/api/v1/stats")
                .then().statusCode(202).body("accepted", is(1));
        report("st-r1", base + 90, List.of(
                entry("st-i1", "st-g", 1, 20, 0, 0, Map.of()),
                entry("st-i2", "st-g", 0, 0, 0, 8, Map.of()))).then().statusCode(202).body("accepted", is(2));
    }

    static Map<String, Object> entry(String inst, String group, long q, long qb, long hb, long wb, Map<String, Long> ev) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("instance", inst);
        m.put("group", group);
        m.put("queries", q);
        m.put("queriedBlocks", qb);
        m.put("hitBlocks", hb);
        m.put("writtenBlocks", wb);
        m.put("evictedBlocks", ev);
        return m;
    }

    static Map<String, Object> body(String replica, long end, List<Map<String, Object>> entries) {
        Map<String, Object> r = new LinkedHashMap<>();
        r.put("id", replica);
        r.put("url", "http://" + replica + ":6382");
        r.put("leader", replica.equals("st-r1"));
        r.put("store", "embedded");
        r.put("version", "0.1.0");
        r.put("startedAt", Instant.ofEpochSecond(base - 3600).toString());
        r.put("instances", 3);
        r.put("keys", 12345);
        return Map.of("replica", r, "intervalEnd", Instant.ofEpochSecond(end).toString(), "instances", entries);
    }

    static io.restassured.response.Response report(String replica, long end, List<Map<String, Object>> entries) {
        return admin().body(body(replica, end, entries)).post("/api/v1/stats");
    }

    static String at(long t) {
        return Instant.ofEpochSecond(t).toString();
    }

    @Test
    void reportsAccumulateIntoMinuteBuckets() {
        JsonPath p = admin().queryParam("group", "st-g").queryParam("since", at(base)).queryParam("until", at(base + 300))
                .queryParam("step", "1m").get("/api/v1/stats/series").then().statusCode(200)
                .body("step", is("PT1M")).body("since", is(at(base))).body("until", is(at(base + 300)))
                .extract().jsonPath();
        assertEquals(2, p.getList("points").size(), p.prettify());
        assertEquals(at(base), p.getString("points[0].t"));
        assertEquals(16, p.getLong("points[0].queries"));
        assertEquals(160, p.getLong("points[0].queriedBlocks"));
        assertEquals(60, p.getLong("points[0].hitBlocks"));
        assertEquals(0.375, p.getDouble("points[0].hitRate"), 1e-6);
        assertEquals(60, p.getLong("points[0].writtenBlocks"));
        assertEquals(Map.of("water_level", 5, "ttl", 2), p.getMap("points[0].evictedBlocks"));
        assertEquals(at(base + 60), p.getString("points[1].t"));
        assertEquals(1, p.getLong("points[1].queries"));
        assertEquals(0.0, p.getDouble("points[1].hitRate"), 0);
        assertEquals(8, p.getLong("points[1].writtenBlocks"));
        assertEquals(Map.of(), p.getMap("points[1].evictedBlocks"));

        // five-minute step: one bucket with everything
        admin().queryParam("group", "st-g").queryParam("since", at(base)).queryParam("until", at(base + 300))
                .queryParam("step", "PT5M").get("/api/v1/stats/series").then().statusCode(200)
                .body("step", is("PT5M")).body("points.size()", is(1)).body("points[0].queries", is(17))
                .body("points[0].queriedBlocks", is(180)).body("points[0].hitBlocks", is(60))
                .body("points[0].writtenBlocks", is(68));

        // one instance; a bucket with nothing queried has hitRate null
        JsonPath i2 = admin().queryParam("instance", "st-i2").queryParam("since", at(base))
                .queryParam("until", at(base + 300)).queryParam("step", "1m").get("/api/v1/stats/series").then()
                .statusCode(200).extract().jsonPath();
        assertEquals(2, i2.getList("points").size(), i2.prettify());
        assertEquals(1.0, i2.getDouble("points[0].hitRate"), 0);
        assertEquals(10, i2.getLong("points[0].hitBlocks"));
        assertNull(i2.get("points[1].hitRate"));
        assertTrue(i2.getMap("points[1]").containsKey("hitRate"), "hitRate is present, as null");
        assertEquals(8, i2.getLong("points[1].writtenBlocks"));

        // no group: every group summed (st-g and st-other, and whatever other tests report outside this range)
        admin().queryParam("since", at(base)).queryParam("until", at(base + 60)).queryParam("step", "1m")
                .get("/api/v1/stats/series").then().statusCode(200).body("points[0].queries", is(23))
                .body("points[0].queriedBlocks", is(230)).body("points[0].evictedBlocks.key_count", is(3));
    }

    @Test
    void summaryNumbersAreExact() {
        JsonPath s = admin().get("/api/v1/stats/summary").then().statusCode(200).extract().jsonPath();
        Map<String, Object> g = s.getMap("groups.find { it.group == 'st-g' }");
        assertEquals(1_000_000_000, ((Number) g.get("quotaBytes")).longValue());
        assertEquals(17, ((Number) g.get("queriesLastHour")).longValue());
        @SuppressWarnings("unchecked")
        Map<String, Object> hr = (Map<String, Object>) g.get("hitRate");
        // the reports are 20 minutes old: nothing in the last 5 minutes
        assertNull(hr.get("last5m"));
        assertEquals(60.0 / 180, ((Number) hr.get("lastHour")).doubleValue(), 1e-6);
        assertEquals(60.0 / 180, ((Number) hr.get("lastDay")).doubleValue(), 1e-6);
        Map<String, Double> epm = toDoubles(g.get("evictionsPerMinute"));
        assertEquals(java.util.Set.of("water_level", "ttl"), epm.keySet());
        assertEquals(5 / 60.0, epm.get("water_level"), 1e-6);
        assertEquals(2 / 60.0, epm.get("ttl"), 1e-6);
        assertEquals(80, ((Number) g.get("softPercent")).intValue());
        assertEquals(95, ((Number) g.get("hardPercent")).intValue());
        Map<String, Object> i1 = s.getMap("instances.find { it.instance == 'st-i1' }");
        assertEquals("st-g", i1.get("group"));
        assertEquals(16, ((Number) i1.get("queriesLastHour")).longValue());
        assertEquals(50, ((Number) i1.get("hitBlocksLastHour")).longValue());
        assertEquals(170, ((Number) i1.get("queriedBlocksLastHour")).longValue());
        assertEquals(50.0 / 170, ((Number) i1.get("hitRateLastHour")).doubleValue(), 1e-6);
        assertTrue(s.getInt("totals.groups") >= 2);
        assertTrue(s.getInt("totals.instances") >= 3);
        assertTrue(s.getInt("totals.storages") >= 1);
    }

    @SuppressWarnings("unchecked")
    static Map<String, Double> toDoubles(Object m) {
        Map<String, Double> out = new LinkedHashMap<>();
        ((Map<String, Object>) m).forEach((k, v) -> out.put(k, ((Number) v).doubleValue()));
        return out;
    }

    @Test
    void aTenantReadsOnlyItsGroups() {
        Api.as(tenant).queryParam("group", "st-other").get("/api/v1/stats/series").then().statusCode(403)
                .contentType("application/problem+json");
        Api.as(tenant).queryParam("instance", "st-o1").get("/api/v1/stats/series").then().statusCode(403);
        Api.as(tenant).queryParam("group", "st-other").get("/api/v1/usage/series").then().statusCode(403);
        Api.as(tenant).body(body("st-r9", Instant.now().getEpochSecond(), List.of())).post("/api/v1/stats").then()
                .statusCode(403);
        // no group: only its own groups are summed (st-other's 7 queries are not in it)
        Api.as(tenant).queryParam("since", at(base)).queryParam("until", at(base + 60)).queryParam("step", "1m")
                .get("/api/v1/stats/series").then().statusCode(200).body("points[0].queries", is(16))
                .body("points[0].evictedBlocks.key_count", nullValue());
        Api.as(tenant).queryParam("group", "st-g").queryParam("since", at(base)).queryParam("until", at(base + 300))
                .get("/api/v1/stats/series").then().statusCode(200).body("points.queries.sum()", is(17));
        JsonPath s = Api.as(tenant).get("/api/v1/stats/summary").then().statusCode(200).extract().jsonPath();
        assertEquals(List.of("st-g"), s.getList("groups.group"));
        assertEquals(List.of("st-i1", "st-i2"), s.getList("instances.instance"));
        assertEquals(1, s.getInt("totals.groups"));
        assertEquals(2, s.getInt("totals.instances"));
        assertEquals(1, s.getInt("totals.storages"));
        assertEquals(60.0 / 180, s.getDouble("totals.hitRateLastHour"), 1e-6);
        // services: statuses without urls
        Api.as(tenant).get("/api/v1/services").then().statusCode(200).body("metadataPlanes.id", hasItem("st-r1"))
                .body("metadataPlanes.find { it.id == 'st-r1' }.url", nullValue())
                .body("metadataPlanes.find { it.id == 'st-r1' }.status", is("UP"));
    }

    @Test
    void servicesShowTheReplicasAndTheControlPlane() throws Exception {
        admin().get("/api/v1/services").then().statusCode(200).body("controlPlane.status", is("UP"))
                .body("controlPlane.version", notNullValue()).body("controlPlane.startedAt", notNullValue())
                .body("metadataPlanes.find { it.id == 'st-r1' }.url", is("http://st-r1:6382"))
                .body("metadataPlanes.find { it.id == 'st-r1' }.leader", is(true))
                .body("metadataPlanes.find { it.id == 'st-r1' }.store", is("embedded"))
                .body("metadataPlanes.find { it.id == 'st-r1' }.instances", is(3))
                .body("metadataPlanes.find { it.id == 'st-r1' }.keys", is(12345))
                .body("metadataPlanes.find { it.id == 'st-r2' }.leader", is(false))
                .body("agents.find { it.id == 'st-quiet' }", nullValue());
        // a replica silent for more than three periods is DOWN
        Api.admin().body(Map.of("replica", Map.of("id", "st-quiet", "periodSeconds", 10))).post("/api/v1/stats").then()
                .statusCode(202).body("accepted", is(0));
        admin().get("/api/v1/services").then().body("metadataPlanes.find { it.id == 'st-quiet' }.status", is("UP"));
        update("update service_replica set last_seen = ? where replica_id = 'st-quiet'",
                java.sql.Timestamp.from(Instant.now().minusSeconds(31)));
        admin().get("/api/v1/services").then().body("metadataPlanes.find { it.id == 'st-quiet' }.status", is("DOWN"));
        update("delete from service_replica where replica_id = ?", "st-quiet");
    }

    static Map<String, Object> heartbeat(String id, Map<String, Object> tiers) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("kind", "agent");
        m.put("id", id);
        m.put("url", "http://" + id + ":6390");
        m.put("version", "0.1.0");
        m.put("startedAt", Instant.now().minusSeconds(60).toString());
        m.put("periodSeconds", 10);
        m.put("tiers", tiers);
        return m;
    }

    @Test
    void agentsReportThroughHeartbeats() throws Exception {
        Map<String, Object> tiers = new LinkedHashMap<>();
        tiers.put("host", Map.of("capacityBytes", 268435456L, "usedBytes", 1048576L, "blocks", 4));
        tiers.put("nvme", Map.of("capacityBytes", 1073741824L, "usedBytes", 0, "blocks", 0));
        tiers.put("pool", Map.of("blocks", 9007199254740992L));
        Api.as(operator).body(heartbeat("st-agent-6390", tiers)).post("/api/v1/services/heartbeat").then()
                .statusCode(204);
        admin().get("/api/v1/services").then().statusCode(200)
                .body("agents.find { it.id == 'st-agent-6390' }.status", is("UP"))
                .body("agents.find { it.id == 'st-agent-6390' }.url", is("http://st-agent-6390:6390"))
                .body("agents.find { it.id == 'st-agent-6390' }.lastSeen", notNullValue())
                .body("agents.find { it.id == 'st-agent-6390' }.tiers.host.capacityBytes", is(268435456))
                .body("agents.find { it.id == 'st-agent-6390' }.tiers.host.usedBytes", is(1048576))
                .body("agents.find { it.id == 'st-agent-6390' }.tiers.host.blocks", is(4))
                .body("agents.find { it.id == 'st-agent-6390' }.tiers.nvme.capacityBytes", is(1073741824))
                .body("agents.find { it.id == 'st-agent-6390' }.tiers.pool.blocks", is(9007199254740992L))
                .body("agents.find { it.id == 'st-agent-6390' }.tiers.pool.capacityBytes", nullValue())
                .body("metadataPlanes.find { it.id == 'st-agent-6390' }", nullValue());
        // a tenant sees the agent and its tiers, not its url; it cannot post a heartbeat
        Api.as(tenant).get("/api/v1/services").then().statusCode(200)
                .body("agents.find { it.id == 'st-agent-6390' }.status", is("UP"))
                .body("agents.find { it.id == 'st-agent-6390' }.url", nullValue())
                .body("agents.find { it.id == 'st-agent-6390' }.tiers.host.blocks", is(4));
        Api.as(tenant).body(heartbeat("st-agent-6390", tiers)).post("/api/v1/services/heartbeat").then()
                .statusCode(403);
        // an id is one service's: an agent cannot take a replica's, nor a replica an agent's
        admin().body(heartbeat("st-r1", tiers)).post("/api/v1/services/heartbeat").then().statusCode(409)
                .body("field", is("id"));
        admin().body(Map.of("replica", Map.of("id", "st-agent-6390"))).post("/api/v1/stats").then().statusCode(409)
                .body("field", is("replica.id"));
        // silent for more than three periods: DOWN; a heartbeat brings it back UP
        update("update service_replica set last_seen = ? where replica_id = 'st-agent-6390'",
                java.sql.Timestamp.from(Instant.now().minusSeconds(31)));
        admin().get("/api/v1/services").then().body("agents.find { it.id == 'st-agent-6390' }.status", is("DOWN"));
        admin().body(heartbeat("st-agent-6390", Map.of())).post("/api/v1/services/heartbeat").then().statusCode(204);
        admin().get("/api/v1/services").then().body("agents.find { it.id == 'st-agent-6390' }.status", is("UP"))
                .body("agents.find { it.id == 'st-agent-6390' }.tiers.size()", is(0));
        update("delete from service_replica where replica_id = ?", "st-agent-6390");
    }

    @Test
    void hostileHeartbeatsAreRefusedNamingTheField() throws Exception {
        long now = Instant.now().getEpochSecond();
        String h = "{\"kind\":\"agent\",\"id\":\"st-h\"";
        List<Object[]> cases = new ArrayList<>();
        cases.add(new Object[] {"{}", "kind"});
        cases.add(new Object[] {"{\"kind\":\"meta\",\"id\":\"st-h\"}", "kind"});
        cases.add(new Object[] {"{\"kind\":\"agent\"}", "id"});
        cases.add(new Object[] {"{\"kind\":\"agent\",\"id\":\" \"}", "id"});
        cases.add(new Object[] {"{\"kind\":\"agent\",\"id\":\"a\\u0000b\"}", "id"});
        cases.add(new Object[] {"{\"kind\":\"agent\",\"id\":\"" + "x".repeat(254) + "\"}", "id"});
        cases.add(new Object[] {h + ",\"url\":\"ftp://x/\"}", "url"});
        cases.add(new Object[] {h + ",\"url\":\"http://u:p@x:6390\"}", "url"});
        cases.add(new Object[] {h + ",\"version\":\"" + "v".repeat(65) + "\"}", "version"});
        cases.add(new Object[] {h + ",\"startedAt\":\"" + at(now + 7200) + "\"}", "startedAt"});
        cases.add(new Object[] {h + ",\"periodSeconds\":0}", "periodSeconds"});
        cases.add(new Object[] {h + ",\"periodSeconds\":86401}", "periodSeconds"});
        cases.add(new Object[] {h + ",\"tiers\":{\"Host Memory\":{}}}", "tiers"});
        cases.add(new Object[] {h + ",\"tiers\":{\"" + "t".repeat(33) + "\":{}}}", "tiers"});
        cases.add(new Object[] {h + ",\"tiers\":{\"host\":null}}", "tiers.host"});
        cases.add(new Object[] {h + ",\"tiers\":{\"host\":{\"usedBytes\":-1}}}", "tiers.host.usedBytes"});
        cases.add(new Object[] {h + ",\"tiers\":{\"host\":{\"capacityBytes\":9007199254740993}}}",
                "tiers.host.capacityBytes"});
        cases.add(new Object[] {h + ",\"tiers\":{\"host\":{\"blocks\":-5}}}", "tiers.host.blocks"});
        cases.add(new Object[] {h + ",\"tiers\":{\"host\":{\"capacityBytes\":1,\"usedBytes\":2}}}",
                "tiers.host.usedBytes"});
        StringBuilder many = new StringBuilder(h + ",\"tiers\":{");
        for (int i = 0; i <= 16; i++) {
            many.append(i == 0 ? "" : ",").append("\"t").append(i).append("\":{}");
        }
        cases.add(new Object[] {many + "}}", "tiers"});
        String before = state();
        for (Object[] c : cases) {
            String detail = admin().body(c[0]).post("/api/v1/services/heartbeat").then().statusCode(400)
                    .contentType("application/problem+json").body("field", is(c[1])).body("detail", notNullValue())
                    .extract().path("detail");
            assertTrue(!detail.isBlank(), c[0].toString());
        }
        assertEquals(before, state(), "refused heartbeats change nothing");
    }

    @Test
    void hostileReportsAreRefusedNamingTheField() throws Exception {
        long now = Instant.now().getEpochSecond();
        Map<String, Object> ok = entry("st-i1", "st-g", 1, 1, 1, 1, Map.of());
        List<Object[]> cases = new ArrayList<>();
        cases.add(new Object[] {"{}", "replica"});
        cases.add(new Object[] {"{\"replica\":{\"id\":\"  \"}}", "replica.id"});
        cases.add(new Object[] {"{\"replica\":{\"id\":\"a\\u0000b\"}}", "replica.id"});
        cases.add(new Object[] {"{\"replica\":{\"id\":\"r\",\"url\":\"ftp://x/\"}}", "replica.url"});
        cases.add(new Object[] {"{\"replica\":{\"id\":\"r\",\"url\":\"http://u:p@x/\"}}", "replica.url"});
        cases.add(new Object[] {"{\"replica\":{\"id\":\"r\",\"store\":\"Embedded Store\"}}", "replica.store"});
        cases.add(new Object[] {"{\"replica\":{\"id\":\"r\",\"keys\":-1}}", "replica.keys"});
        cases.add(new Object[] {"{\"replica\":{\"id\":\"r\",\"periodSeconds\":0}}", "replica.periodSeconds"});
        cases.add(new Object[] {"{\"replica\":{\"id\":\"r\",\"startedAt\":\"" + at(now + 7200) + "\"}}",
                "replica.startedAt"});
        cases.add(new Object[] {"{\"replica\":{\"id\":\"r\"},\"intervalEnd\":\"" + at(now + 7200) + "\"}", "intervalEnd"});
        cases.add(new Object[] {"{\"replica\":{\"id\":\"r\"},\"intervalEnd\":\"" + at(now - 7200) + "\"}", "intervalEnd"});
        String r = "{\"replica\":{\"id\":\"r\"},\"instances\":[";
        cases.add(new Object[] {r + "{\"instance\":\"st-i1\",\"group\":\"st-g\",\"queries\":-1}]}", "instances[0].queries"});
        cases.add(new Object[] {r + "{\"instance\":\"st-i1\",\"group\":\"st-g\",\"writtenBlocks\":9007199254740993}]}",
                "instances[0].writtenBlocks"});
        cases.add(new Object[] {r + "{\"instance\":\"st-i1\",\"group\":\"st-g\",\"queriedBlocks\":1,\"hitBlocks\":2}]}",
                "instances[0].hitBlocks"});
        cases.add(new Object[] {r + "{\"instance\":\"st-i1\",\"group\":\"st-ghost\"}]}", "instances[0].group"});
        cases.add(new Object[] {r + "{\"instance\":\"st-i1\",\"group\":\"../g\"}]}", "instances[0].group"});
        cases.add(new Object[] {r + "{\"instance\":\"\",\"group\":\"st-g\"}]}", "instances[0].instance"});
        cases.add(new Object[] {r + "{\"instance\":\"st-i1\",\"group\":\"st-g\",\"evictedBlocks\":{\"bogus\":1}}]}",
                "instances[0].evictedBlocks"});
        cases.add(new Object[] {r + "{\"instance\":\"st-i1\",\"group\":\"st-g\",\"evictedBlocks\":{\"ttl\":-4}}]}",
                "instances[0].evictedBlocks.ttl"});
        cases.add(new Object[] {r + "{\"instance\":\"st-i1\",\"group\":\"st-g\"},{\"instance\":\"st-i1\",\"group\":\"st-g\"}]}",
                "instances[1].instance"});
        cases.add(new Object[] {r + "null]}", "instances[0]"});
        String before = state();
        for (Object[] c : cases) {
            String detail = admin().body(c[0]).post("/api/v1/stats").then().statusCode(400)
                    .contentType("application/problem+json").body("field", is(c[1])).body("detail", notNullValue())
                    .extract().path("detail");
            assertTrue(!detail.isBlank(), c[0].toString());
        }
        // too many instances
        List<Map<String, Object>> many = new ArrayList<>();
        for (int i = 0; i <= 10_000; i++) {
            many.add(ok);
        }
        admin().body(body("st-r1", now, many)).post("/api/v1/stats").then().statusCode(400).body("field", is("instances"));
        // a valid entry before a bad one: nothing of the report is kept
        admin().body(body("st-r1", now, List.of(ok, entry("st-i2", "st-g", 1, 1, 2, 0, Map.of()))))
                .post("/api/v1/stats").then().statusCode(400).body("field", is("instances[1].hitBlocks"));
        assertEquals(before, state(), "refused reports change nothing");
        // hostile query values
        admin().queryParam("step", "30s").get("/api/v1/stats/series").then().statusCode(400).body("field", is("step"));
        admin().queryParam("step", "PT30S").get("/api/v1/stats/series").then().statusCode(400).body("field", is("step"));
        admin().queryParam("step", "PT1M").queryParam("since", "1970-01-01T00:00:00Z").get("/api/v1/stats/series").then()
                .statusCode(400).body("field", is("step"));
        admin().queryParam("since", at(now)).queryParam("until", at(now - 60)).get("/api/v1/stats/series").then()
                .statusCode(400).body("field", is("since"));
        admin().queryParam("until", "yesterday").get("/api/v1/usage/series").then().statusCode(400)
                .body("field", is("until"));
        admin().queryParam("group", "st-ghost").get("/api/v1/stats/series").then().statusCode(404);
        admin().queryParam("group", "a\u0000b").get("/api/v1/stats/series").then().statusCode(400)
                .body("field", is("group"));
    }

    /** The stats rows and replicas, as a fingerprint. */
    String state() throws Exception {
        try (Connection c = db.getConnection(); ResultSet r = c.createStatement().executeQuery(
                "select (select count(*) from stats_minute), (select coalesce(sum(queries), 0) from stats_minute), "
                        + "(select count(*) from service_replica), (select max(last_seen) from service_replica)")) {
            r.next();
            return r.getLong(1) + "/" + r.getLong(2) + "/" + r.getLong(3) + "/" + r.getTimestamp(4);
        }
    }

    void update(String sql, Object... args) throws Exception {
        try (Connection c = db.getConnection(); PreparedStatement s = c.prepareStatement(sql)) {
            for (int i = 0; i < args.length; i++) {
                s.setObject(i + 1, args[i]);
            }
            s.executeUpdate();
        }
    }

    long single(String sql, Object... args) throws Exception {
        try (Connection c = db.getConnection(); PreparedStatement s = c.prepareStatement(sql)) {
            for (int i = 0; i < args.length; i++) {
                s.setObject(i + 1, args[i]);
            }
            try (ResultSet r = s.executeQuery()) {
                r.next();
                return r.getLong(1);
            }
        }
    }

    @Test
    void rollUpPreservesSumsAndUsageIsThinned() throws Exception {
        Api.group("st-ret", "st_nfs");
        long now = Instant.now().getEpochSecond();
        long hour = Math.floorDiv(now, 3600L) * 3600 - 3 * 86_400; // an hour three days ago
        // minute buckets of that hour for two instances, and one of the next hour
        long q = 0, hb = 0, water = 0, ttl = 0;
        for (int m = 0; m < 60; m += 7) {
            for (String inst : List.of("st-ri1", "st-ri2")) {
                update("insert into stats_minute values ('st-ret', ?, ?, ?, ?, ?, 1, ?, 0, 0, 1)", hour + m * 60L, inst,
                        m + 1, 10L * (m + 1), m, (long) m % 3);
                q += m + 1;
                hb += m;
                water += m % 3;
                ttl++;
            }
        }
        update("insert into stats_minute values ('st-ret', ?, 'st-ri1', 5, 5, 5, 5, 0, 0, 0, 0)", hour + 3600 + 120);
        // an hour bucket past the hour retention, and one inside it
        update("insert into stats_hour values ('st-ret', ?, 'st-ri1', 1, 1, 1, 1, 0, 0, 0, 0)", now - 36 * 86_400L);
        update("insert into stats_hour values ('st-ret', ?, 'st-ri1', 2, 2, 2, 2, 0, 0, 0, 0)",
                Math.floorDiv(now, 3600L) * 3600 - 34 * 86_400L);
        String since = at(hour - 86_400), until = at(hour + 2 * 3600);
        JsonPath before = admin().queryParam("group", "st-ret").queryParam("since", since).queryParam("until", until)
                .queryParam("step", "1d").get("/api/v1/stats/series").then().statusCode(200).extract().jsonPath();

        // usage samples: four in one old hour (the last one kept), two in the next hour, and recent ones untouched
        List<Map<String, Object>> samples = new ArrayList<>();
        long[] offsets = {60, 600, 1800, 3500, 3600 + 10, 3600 + 20};
        for (int i = 0; i < offsets.length; i++) {
            samples.add(Map.of("group", "st-ret", "storageType", "nfs", "usedBytes", 100 + i,
                    "timestamp", at(hour + offsets[i])));
        }
        samples.add(Map.of("group", "st-ret", "storageType", "nfs", "usedBytes", 900, "timestamp", at(now - 120)));
        samples.add(Map.of("group", "st-ret", "storageType", "nfs", "usedBytes", 901, "timestamp", at(now - 60)));
        admin().body(Map.of("samples", samples)).post("/api/v1/usage").then().statusCode(202);
        admin().queryParam("group", "st-ret").queryParam("since", at(hour)).queryParam("until", at(hour + 7200))
                .queryParam("step", "1h").get("/api/v1/usage/series").then().statusCode(200)
                .body("step", is("PT1H")).body("points.usedBytes", is(List.of(103, 105)))
                .body("points[0].byType.nfs", is(103)).body("points[0].t", is(at(hour)));

        Retention.Downsampled d = retention.downsample(Instant.ofEpochSecond(now));
        assertTrue(d.minuteRowsRolledUp() >= 19, d.toString());
        assertEquals(0, single("select count(*) from stats_minute where group_name = 'st-ret'"));
        assertEquals(q, single("select queries from stats_hour where group_name = 'st-ret' and t = ? and instance_id = "
                + "'st-ri1'", hour) + single("select queries from stats_hour where group_name = 'st-ret' and t = ? and "
                + "instance_id = 'st-ri2'", hour));
        assertEquals(5, single("select queries from stats_hour where group_name = 'st-ret' and t = ?", hour + 3600));
        assertEquals(0, single("select count(*) from stats_hour where group_name = 'st-ret' and t < ?",
                now - 35 * 86_400L), "the bucket past the hour retention is dropped");
        assertEquals(2, single("select queries from stats_hour where group_name = 'st-ret' and t < ?",
                now - 30 * 86_400L), "the one inside it is kept");
        JsonPath after = admin().queryParam("group", "st-ret").queryParam("since", since).queryParam("until", until)
                .queryParam("step", "1d").get("/api/v1/stats/series").then().statusCode(200).extract().jsonPath();
        assertEquals(before.getList("points"), after.getList("points"), "the roll-up preserves every sum");
        admin().queryParam("group", "st-ret").queryParam("since", at(hour)).queryParam("until", at(hour + 7200))
                .queryParam("step", "1h").get("/api/v1/stats/series").then().statusCode(200)
                .body("points.queries", is(List.of((int) q, 5))).body("points[0].hitBlocks", is((int) hb))
                .body("points[0].evictedBlocks.ttl", is((int) ttl))
                .body("points[0].evictedBlocks.water_level", is((int) water))
                .body("points[0].evictedBlocks.key_count", nullValue());

        assertEquals(2, single("select count(*) from usage_sample where group_name = 'st-ret' and sampled_at < ?",
                java.sql.Timestamp.from(Instant.ofEpochSecond(now - 86_400))), "one sample per old hour");
        assertEquals(2, single("select count(*) from usage_sample where group_name = 'st-ret' and sampled_at >= ?",
                java.sql.Timestamp.from(Instant.ofEpochSecond(now - 86_400))), "recent samples untouched");
        admin().queryParam("group", "st-ret").queryParam("since", at(hour)).queryParam("until", at(hour + 7200))
                .queryParam("step", "1h").get("/api/v1/usage/series").then().statusCode(200)
                .body("points.usedBytes", is(List.of(103, 105)));
        // the group goes, and its history with it
        admin().delete("/api/v1/instance-groups/st-ret").then().statusCode(204);
        assertEquals(0, single("select count(*) from stats_hour where group_name = 'st-ret'"));
        assertEquals(0, single("select count(*) from usage_sample where group_name = 'st-ret'"));
    }
}
