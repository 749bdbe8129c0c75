package dev.kvpool.meta.api;

import static io.restassured.RestAssured.given;
import static org.hamcrest.Matchers.containsString;
import static org.hamcrest.Matchers.equalTo;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.kvpool.api.proto.meta.StartWriteCacheResponse;
import dev.kvpool.meta.support.KvcmTestBase;
import dev.kvpool.meta.support.KvcmTestProfile;
import dev.kvpool.meta.support.MetaApi;
import dev.kvpool.meta.support.Transport;
import io.quarkus.test.junit.QuarkusTest;
import io.quarkus.test.junit.TestProfile;
import io.restassured.path.json.JsonPath;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The storage sweep over REST in the running service: a dry run reports a slab file that holds no block and
 * deletes nothing; a real sweep deletes it and leaves the files blocks live in; progress and counts are readable
 * while and after it runs; bad input is named.
 */
@QuarkusTest
@TestProfile(KvcmTestProfile.class)
class StorageSweepApiTest extends KvcmTestBase {

    /** Starts a sweep (waiting out one the schedule may be running) and returns its final report. */
    private static JsonPath sweep(boolean dryRun) {
        await("a sweep kept running", Duration.ofSeconds(30), () -> {
            var r = given().post("/api/v1/storage/sweeps" + (dryRun ? "?dry_run=true" : "")).then().extract();
            if (r.statusCode() != 202) {
                assertEquals(409, r.statusCode(), r.body().asString());
                return false;
            }
            assertEquals("/api/v1/storage/sweeps/latest", URI.create(r.header("Location")).getPath());
            assertEquals(dryRun, r.jsonPath().getBoolean("dry_run"));
            assertEquals("request", r.jsonPath().getString("trigger"));
            return true;
        });
        JsonPath[] last = new JsonPath[1];
        await("the sweep ends", Duration.ofSeconds(30), () -> {
            last[0] = given().get("/api/v1/storage/sweeps/latest").then().statusCode(200).extract().jsonPath();
            return !last[0].getString("state").equals("running");
        });
        assertEquals("done", last[0].getString("state"), last[0].prettify());
        return last[0];
    }

    private static Map<String, Object> dirOf(JsonPath report, String instance) {
        List<Map<String, Object>> dirs = report.getList("dirs");
        return dirs.stream().filter(d -> instance.equals(d.get("instance"))).findFirst().orElseThrow(
                () -> new AssertionError("no directory of " + instance + " in " + report.prettify()));
    }

    @Test
    void aDryRunReportsAndARealSweepDeletesOnlyTheFileWithoutABlock() throws Exception {
        MetaApi a = api(Transport.HTTP);
        String id = registered(a, reg(uid("sweep"), 16, "tp0", 1000));
        long[] keys = rndKeys(3);
        StartWriteCacheResponse s = write(a, id, keys);
        Path live = Path.of(URI.create(s.getLocations(0).getLocationSpecs(0).getUri()).getPath());
        Path dir = live.getParent();
        Files.createDirectories(dir);
        Files.write(live, new byte[3000]); // what the writer wrote
        Path orphan = dir.resolve("slab_7fffffff"); // far above anything the allocator opened
        Files.write(orphan, new byte[1000]);
        FileTime old = FileTime.fromMillis(System.currentTimeMillis() - 3 * 3_600_000L);
        Files.setLastModifiedTime(orphan, old);
        Files.setLastModifiedTime(live, old);
        try {
            given().post("/api/v1/storage/sweeps?dry_run=maybe").then().statusCode(400)
                    .body("detail", containsString("dry_run"));

            Map<String, Object> dry = dirOf(sweep(true), id);
            assertEquals("nfs_01", dry.get("storage"));
            assertEquals(dir.toString(), dry.get("path"));
            assertEquals(1, dry.get("live_files"));
            assertEquals(1, dry.get("orphan_files"));
            assertEquals(1000, dry.get("orphan_bytes"));
            assertEquals(0, dry.get("deleted_files"));
            assertTrue(Files.exists(orphan), "a dry run deletes nothing");

            JsonPath real = sweep(false);
            Map<String, Object> d = dirOf(real, id);
            assertEquals(1, d.get("deleted_files"));
            assertEquals(1000, d.get("deleted_bytes"));
            assertEquals(real.getInt("dirs_total"), real.getInt("dirs_done"));
            assertFalse(Files.exists(orphan));
            assertTrue(Files.exists(live), "the file a block lives in stays, however old");
            assertEquals(3, prefix(a, id, keys).size(), "its blocks are still served");

            given().get("/q/metrics").then().statusCode(200)
                    .body(containsString("kvpool_meta_files_orphans_deleted "))
                    .body(containsString("kvpool_meta_files_sweeps "));
            given().get("/api/v1/storage/sweeps/latest").then().statusCode(200).body("state", equalTo("done"));
        } finally {
            Files.deleteIfExists(live);
            Files.deleteIfExists(orphan);
        }
    }
}
