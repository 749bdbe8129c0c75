package dev.kvpool.meta.security;

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
 * Two tenants' groups, team-a and team-b, on one file storage whose root is a fresh directory (so a test can
 * prove nothing is created outside it), with tokens checked (kvpool.meta.auth.public-key) and no anonymous access.
 * The hostile-input suite and the tenant-isolation tests share this boot.
 */
public class TenantsProfile implements QuarkusTestProfile {
    static final KeyPair KEYS = JwtTokens.generateKeyPair();
    static final String ADMIN = token(BearerToken.ADMIN, Set.of()), TENANT_A = token(BearerToken.TENANT, Set.of("team-a")),
            TENANT_B = token(BearerToken.TENANT, Set.of("team-b"));
    /** The parent of the storage root: nothing may ever appear here but the root itself and the startup file. */
    static final Path BOX;
    static final Path ROOT;

    static {
        // one path per test JVM, whichever class loader runs this (TestDirs removes those of finished JVMs)
        TestDirs.freshDataDir("tenants");
        BOX = Path.of("target", "test-data").toAbsolutePath().resolve("tenants-" + ProcessHandle.current().pid() + "-box");
        ROOT = BOX.resolve("nfs");
        try {
            Files.createDirectories(ROOT);
            String group = """
                    {"name": "%s", "storage_candidates": ["nfs_t"], "global_quota_group_name": "%s_q",
                     "max_instance_count": 1000,
                     "quota": {"capacity": %d, "quota_config": [{"storage_type": "file", "capacity": %d}]},
                     "cache_config": {"cache_prefer_strategy": 0,
                                      "meta_indexer_config": {"max_key_count": 1000000, "mutex_shard_num": 16}}}""";
            Files.writeString(BOX.resolve("startup.json"), """
                    {"storages": [{"storage_config": {"type": "file", "global_unique_name": "nfs_t",
                                   "storage_spec": {"root_path": "%s/", "key_count_per_file": 8}}}],
                     "instance_groups": [%s, %s]}""".formatted(ROOT, group.formatted("team-a", "team-a", 1L << 30, 1L << 30),
                    group.formatted("team-b", "team-b", 1L << 30, 1L << 30)));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    static String token(String role, Set<String> groups) {
        long now = Instant.now().getEpochSecond();
        return JwtTokens.issue(KEYS.getPrivate(), "test-key", "kvpool", new BearerToken.Claims("u-" + role + groups, role, groups,
                now, now + Duration.ofHours(2).toSeconds(), java.util.UUID.randomUUID().toString()));
    }

    @Override
    public Map<String, String> getConfigOverrides() {
        return Map.of("kvpool.meta.auth.public-key", JwtTokens.encodePublicKey(KEYS.getPublic()),
                "kvpool.meta.startup-config", BOX.resolve("startup.json").toString(),
                "kvpool.data-dir", TestDirs.freshDataDir("tenants"),
                "kvpool.meta.http.max-body-bytes", Long.toString(8L << 20),
                "kvpool.meta.whatif.max-trace-bytes", "1M",
                // stalled bodies end within the suite's patience
                "kvpool.http.body-timeout", "2s");
    }
}
