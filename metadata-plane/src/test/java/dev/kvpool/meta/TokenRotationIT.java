package dev.kvpool.meta;

import static dev.kvpool.meta.ControlPlaneSyncIT.call;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.kvpool.meta.ControlPlaneSyncIT.Res;
import dev.kvpool.meta.support.MetaProcess;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Tokens end to end across the packaged control plane (H2, a child JVM) and a packaged metadata plane configured by
 * it: key rotation (old and new tokens accepted there), sign-out, a group change and a disabled account refused
 * there within seconds (measured), and hostile tokens answered with KVCM's refusal or 401, never a 5xx.
 */
class TokenRotationIT {
    private static final ObjectMapper M = new ObjectMapper();
    private static final String ADMIN_PW = "Boot-Strap-Passw0rd1", OP_PW = "Operat0r-Passw0rd", TENANT_PW = "Team-Search-Pw0rd9";

    @TempDir
    Path dir;
    private Process controlPlane;
    private final List<MetaProcess> metas = new ArrayList<>();
    private String cp;

    private Res cpCall(String method, String path, Object body, String token) throws IOException {
        return call(method, cp + path, body == null ? null : body.toString(), token, null);
    }

    private static Res rpc(MetaProcess m, String route, ObjectNode body, String token) throws IOException {
        return call("POST", "http://127.0.0.1:" + m.httpPort + "/api/" + route, body.toString(), token, null);
    }

    private static void created(Res r, String what) {
        if (r.status() / 100 != 2) {
            fail(what + ": HTTP " + r.status() + " " + r.body());
        }
    }

    @AfterEach
    void stopAll() throws Exception {
        for (MetaProcess m : metas) {
            m.close();
        }
        if (controlPlane != null && controlPlane.isAlive()) {
            controlPlane.destroy();
            if (!controlPlane.waitFor(20, TimeUnit.SECONDS)) {
                controlPlane.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
            }
        }
    }

    private void startControlPlane() throws Exception {
        String jar = System.getProperty("kvpool.control.jar", "../control-plane/target/quarkus-app/quarkus-run.jar");
        assertTrue(Files.isRegularFile(Path.of(jar)), "packaged control plane missing: " + jar);
        int http = MetaProcess.freePort(), grpc = MetaProcess.freePort();
        cp = "http://127.0.0.1:" + http;
        Path log = dir.resolve("control-plane.log");
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        controlPlane = dev.kvpool.testing.ChildProcesses.killOnExit(new ProcessBuilder(java, "-Xmx384m",
                "-XX:+UseSerialGC", "-Dkvpool.data-dir=" + dir.resolve("cp-data"),
                "-Dkvpool.control.bootstrap-admin.password=" + ADMIN_PW, "-Dkvpool.control.http-port=" + http,
                "-Dkvpool.control.grpc-port=" + grpc, "-jar", jar)
                .redirectErrorStream(true).redirectOutput(log.toFile()).start());
        long end = System.currentTimeMillis() + 90_000;
        while (true) {
            if (!controlPlane.isAlive()) {
                fail("control plane exited: " + Files.readString(log));
            }
            try {
                if (call("GET", cp + "/q/health/ready", null, null, null).status() == 200) {
                    break;
                }
            } catch (IOException e) {
                // not listening yet
            }
            if (System.currentTimeMillis() > end) {
                fail("control plane not ready: " + log);
            }
            Thread.sleep(200);
        }
    }

    private String token(String user, String password) throws IOException {
        Res r = cpCall("POST", "/api/v1/tokens", M.createObjectNode().put("user", user).put("password", password), null);
        created(r, "token for " + user);
        return r.body().path("token").asText();
    }

    private static String kid(String token) throws IOException {
        return M.readTree(Base64.getUrlDecoder().decode(token.split("\\.")[0])).path("kid").asText();
    }

    private static ObjectNode register(String instance, String group) {
        ObjectNode b = M.createObjectNode().put("trace_id", "t").put("instance_group", group).put("instance_id", instance)
                .put("block_size", 4);
        b.putObject("model_deployment").put("model_name", "m").put("dtype", "bf16");
        b.putArray("location_spec_infos").addObject().put("name", "tp0").put("size", 4096);
        return b;
    }

    private static ObjectNode info(String instance) {
        return M.createObjectNode().put("trace_id", "t").put("instance_id", instance);
    }

    /** A KVCM call on the metadata plane with this token: true when it was let through. */
    private static boolean accepted(MetaProcess m, String token) throws IOException {
        Res r = rpc(m, "getInstanceInfo", info("ia"), token);
        assertEquals(200, r.status(), "the KVCM envelope keeps HTTP 200: " + r.body());
        if (r.code().equals("OK")) {
            return true;
        }
        assertEquals("INVALID_ARGUMENT", r.code(), r.body().toString());
        return false;
    }

    /** Milliseconds until the metadata plane refuses the token (fails past 10 s). */
    private static long untilRefused(MetaProcess m, String token, String what) throws Exception {
        long t0 = System.nanoTime();
        while (accepted(m, token)) {
            if (System.nanoTime() - t0 > 10_000_000_000L) {
                fail(what + ": still accepted by the metadata plane after 10 s");
            }
            Thread.sleep(20);
        }
        long ms = (System.nanoTime() - t0) / 1_000_000;
        System.out.printf("[tokens] %s: refused by the metadata plane after %d ms%n", what, ms);
        return ms;
    }

    private String etag(String account, String admin) throws IOException {
        return call("GET", cp + "/api/v1/accounts/" + account, null, admin, null).body().path("version").asText();
    }

    @Test
    void rotationAndRevocationReachTheMetadataPlane() throws Exception {
        startControlPlane();
        String admin = token("admin", ADMIN_PW);
        created(cpCall("POST", "/api/v1/accounts", M.createObjectNode().put("name", "meta-op").put("password", OP_PW)
                .put("role", "operator"), admin), "operator account");
        Path nfs = Files.createDirectories(dir.resolve("nfs"));
        ObjectNode st = M.createObjectNode().put("name", "nfs_it").put("type", "nfs");
        st.putObject("spec").put("root_path", nfs + "/").put("key_count_per_file", 8);
        created(cpCall("POST", "/api/v1/storages", st, admin), "storage");
        for (String g : List.of("ga", "gb")) {
            ObjectNode grp = M.createObjectNode().put("name", g).put("quotaBytes", 1_000_000).put("allowAnonymousMeta", false)
                    .put("maxInstanceCount", 10);
            grp.putArray("storageCandidates").add("nfs_it");
            created(cpCall("POST", "/api/v1/instance-groups", grp, admin), "group " + g);
        }
        for (String t : List.of("tenant-a", "tenant-b")) {
            ObjectNode ten = M.createObjectNode().put("name", t).put("password", TENANT_PW).put("role", "tenant");
            ten.putArray("groups").add("ga");
            created(cpCall("POST", "/api/v1/accounts", ten, admin), "tenant " + t);
        }
        created(cpCall("POST", "/api/v1/accounts", M.createObjectNode().put("name", "op2").put("password", OP_PW)
                .put("role", "operator"), admin), "second operator");
        String oldTenant = token("tenant-a", TENANT_PW);

        MetaProcess meta = MetaProcess.start("meta", dir, List.of("kvpool.data-dir=" + dir.resolve("meta-data"),
                "kvpool.meta.control-plane.url=" + cp, "kvpool.meta.control-plane.user=meta-op",
                "kvpool.meta.control-plane.password=" + OP_PW, "kvpool.meta.control-plane.resync=10m"));
        metas.add(meta);
        Res reg = rpc(meta, "registerInstance", register("ia", "ga"), oldTenant);
        assertEquals("OK", reg.code(), reg.body().toString());
        assertTrue(accepted(meta, oldTenant));

        // rotation: a new key signs new tokens; the metadata plane accepts both (the new kid makes it refetch)
        String oldKid = kid(oldTenant);
        Res rot = cpCall("POST", "/api/v1/auth/keys/rotate", null, admin);
        created(rot, "rotate");
        String newTenant = token("tenant-a", TENANT_PW);
        assertNotEquals(oldKid, kid(newTenant));
        assertEquals(rot.body().path("kid").asText(), kid(newTenant));
        long t0 = System.nanoTime();
        assertTrue(accepted(meta, newTenant), "a token of the new key, at its first use");
        System.out.printf("[tokens] first call with a new-key token answered in %d ms%n", (System.nanoTime() - t0) / 1_000_000);
        assertTrue(accepted(meta, oldTenant), "a token of the retired key until it expires");
        assertEquals(200, cpCall("GET", "/api/v1/instances/ia", null, oldTenant).status(), "and on the control plane");

        // sign-out of one token: refused there within seconds; the other token of the account is not
        assertEquals(204, cpCall("POST", "/api/v1/auth/sign-out", null, oldTenant).status());
        assertEquals(401, cpCall("GET", "/api/v1/instances/ia", null, oldTenant).status());
        long signOut = untilRefused(meta, oldTenant, "sign-out");
        assertTrue(accepted(meta, newTenant));

        // groups changed: the account's earlier tokens refused; a token issued after it carries the new groups
        Res ch = call("PUT", cp + "/api/v1/accounts/tenant-a", "{\"groups\": [\"gb\"]}", admin, etag("tenant-a", admin));
        created(ch, "tenant-a moved to gb");
        long groups = untilRefused(meta, newTenant, "groups changed");
        String moved = token("tenant-a", TENANT_PW);
        Res other = rpc(meta, "getInstanceInfo", info("ia"), moved);
        assertEquals("INVALID_ARGUMENT", other.code(), "ia is in ga; tenant-a is now bound to gb only");
        assertTrue(other.body().toString().contains("permission denied"), other.body().toString());

        // disabled: refused there too (and on the metadata plane's REST: 401)
        String tb = token("tenant-b", TENANT_PW), op2 = token("op2", OP_PW);
        assertTrue(accepted(meta, tb));
        String metaUrl = "http://127.0.0.1:" + meta.httpPort;
        assertEquals(200, call("GET", metaUrl + "/api/v1/groups/ga", null, op2, null).status());
        created(call("PUT", cp + "/api/v1/accounts/tenant-b", "{\"disabled\": true}", admin, etag("tenant-b", admin)),
                "disable tenant-b");
        long disabled = untilRefused(meta, tb, "account disabled");
        created(call("DELETE", cp + "/api/v1/accounts/op2", null, admin, null), "delete op2");
        long t1 = System.nanoTime();
        while (call("GET", metaUrl + "/api/v1/groups/ga", null, op2, null).status() == 200) {
            assertTrue(System.nanoTime() - t1 < 10_000_000_000L, "deleted account's token still accepted after 10 s");
            Thread.sleep(20);
        }
        assertEquals(401, call("GET", metaUrl + "/api/v1/groups/ga", null, op2, null).status());
        long deleted = (System.nanoTime() - t1) / 1_000_000;
        System.out.printf("[tokens] account deleted: refused by the metadata plane's REST after %d ms%n", deleted);
        for (long ms : new long[] {signOut, groups, disabled, deleted}) {
            assertTrue(ms < 3_000, "revocations reach the metadata plane within 3 s: " + ms + " ms");
        }

        // hostile tokens: KVCM refusal (never a 5xx or a dropped connection), REST 401
        Base64.Encoder b64 = Base64.getUrlEncoder().withoutPadding();
        String[] p = moved.split("\\.");
        String none = b64.encodeToString("{\"alg\":\"none\"}".getBytes(StandardCharsets.UTF_8)) + "." + p[1] + ".";
        String hs = b64.encodeToString("{\"alg\":\"HS256\",\"kid\":\"x\"}".getBytes(StandardCharsets.UTF_8)) + "." + p[1]
                + "." + p[2];
        String unknownKid = b64.encodeToString("{\"alg\":\"EdDSA\",\"kid\":\"nope\"}".getBytes(StandardCharsets.UTF_8))
                + "." + p[1] + "." + p[2];
        for (String bad : List.of(none, hs, unknownKid, "y".repeat(9000), "x.y")) {
            assertTrue(!accepted(meta, bad), bad.length() > 60 ? bad.substring(0, 60) : bad);
            assertEquals(401, call("GET", metaUrl + "/api/v1/groups/ga", null, bad, null).status());
        }
        Res huge = rpc(meta, "getInstanceInfo", info("ia"), "y".repeat(9000));
        assertTrue(huge.body().toString().contains("token too large"), huge.body().toString());
    }
}
