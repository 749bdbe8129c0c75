package dev.kvpool.meta.engine.report;

import dev.kvpool.api.auth.BearerToken;
import dev.kvpool.api.auth.JwtTokens;
import dev.kvpool.meta.support.TestDirs;
import io.quarkus.test.junit.QuarkusTestProfile;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyPair;
import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import java.util.Set;

/**
 * Engine-report suite: groups er-a (event-report candidates er_l1 and er_l2), er-b (er_l1 only) and er-small
 * (er_l1, max_key_count 5), tokens checked (no anonymous calls). The event-report storages themselves are put
 * into the registry by the test (the startup file's storage parsing is another change's).
 */
public class EngineReportProfile implements QuarkusTestProfile {
    static final KeyPair KEYS = JwtTokens.generateKeyPair();
    static final String ADMIN = token(BearerToken.ADMIN, Set.of()), TENANT_A = token(BearerToken.TENANT, Set.of("er-a")),
            TENANT_B = token(BearerToken.TENANT, Set.of("er-b"));
    static final Path BOX;

    static {
        TestDirs.freshDataDir("enginereport");
        BOX = Path.of("target", "test-data").toAbsolutePath().resolve("enginereport-" + ProcessHandle.current().pid() + "-box");
        try {
            Files.createDirectories(BOX.resolve("nfs"));
            String group = """
                    {"name": "%s", "storage_candidates": ["nfs_e"], "global_quota_group_name": "%s_q",
                     "max_instance_count": 1000, "extra_info": "{\\"zone\\":\\"%s\\"}",
                     "event_report_storage_candidates": %s,
                     "quota": {"capacity": %d, "quota_config": [{"storage_type": "file", "capacity": %d}]},
                     "cache_config": {"cache_prefer_strategy": 0,
                                      "meta_indexer_config": {"max_key_count": %d, "mutex_shard_num": 16}}}""";
            long q = 1L << 30;
            Files.writeString(BOX.resolve("startup.json"), """
                    {"storages": [{"storage_config": {"type": "file", "global_unique_name": "nfs_e",
                                   "storage_spec": {"root_path": "%s/", "key_count_per_file": 8}}}],
                     "instance_groups": [%s, %s, %s]}""".formatted(BOX.resolve("nfs"),
                    group.formatted("er-a", "er-a", "a", "[\"er_l1\", \"er_l2\"]", q, q, 1_000_000),
                    // the old spelling of field 10 (§6.1)
                    group.formatted("er-b", "er-b", "b", "[\"er_l1\"]", q, q, 1_000_000)
                            .replace("event_report_storage_candidates", "event_reporting_storage_candidates"),
                    group.formatted("er-small", "er-small", "s", "[\"er_l1\"]", q, q, 5)
                            .replace("\"mutex_shard_num\": 16", "\"mutex_shard_num\": 4")));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    static String token(String role, Set<String> groups) {
        long now = Instant.now().getEpochSecond();
        return JwtTokens.issue(KEYS.getPrivate(), "test-key", "kvpool", new BearerToken.Claims("u-" + role + groups, role,
                groups, now, now + Duration.ofHours(2).toSeconds(), java.util.UUID.randomUUID().toString()));
    }

    @Override
    public Map<String, String> getConfigOverrides() {
        return Map.of("kvpool.meta.auth.public-key", JwtTokens.encodePublicKey(KEYS.getPublic()),
                "kvpool.meta.startup-config", BOX.resolve("startup.json").toString(),
                "kvpool.data-dir", TestDirs.freshDataDir("enginereport"),
                "kvpool.meta.files.sweep-interval", "0");
    }
}
