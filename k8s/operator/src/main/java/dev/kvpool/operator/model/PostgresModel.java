package dev.kvpool.operator.model;

import dev.kvpool.operator.crd.KVPool;
import dev.kvpool.operator.crd.KVPoolSpec;
import io.fabric8.kubernetes.api.model.GenericKubernetesResource;
import io.fabric8.kubernetes.api.model.ResourceRequirements;
import java.util.Map;

/**
 * The managed PostgreSQL of a {@link KVPool}: a CloudNativePG {@code postgresql.cnpg.io/v1 Cluster}
 * {@code <pool>-postgres} with database and owner {@code kvpool}. Pure.
 *
 * <p>Field names checked against cloudnative-pg {@code api/v1/cluster_types.go} ({@code instances},
 * {@code imageName}, {@code storage.size}, {@code storage.storageClass}, {@code resources},
 * {@code bootstrap.initdb.database/owner}) and {@code pkg/specs/secrets.go}: the operator writes the owner's
 * credentials to the Secret {@code <cluster>-app} with keys {@code username}, {@code password}, {@code dbname},
 * {@code host}, {@code port}, {@code uri}, {@code jdbc-uri} (and {@code fqdn-*}); the read-write Service is
 * {@code <cluster>-rw}.
 */
public final class PostgresModel extends ComponentModel {
    public static final String COMPONENT = "postgres";
    public static final String API_VERSION = "postgresql.cnpg.io/v1";
    public static final String KIND = "Cluster";
    public static final String DATABASE = "kvpool";
    public static final String OWNER = "kvpool";

    private final KVPoolSpec.ManagedPostgres managed;

    private PostgresModel(KVPool pool) {
        super(pool, COMPONENT);
        KVPoolSpec.Engines e = pool.getSpec().engines;
        this.managed = e == null || e.postgres == null || e.postgres.managed == null
                ? new KVPoolSpec.ManagedPostgres() : e.postgres.managed;
    }

    public static PostgresModel of(KVPool pool) {
        return new PostgresModel(pool);
    }

    /** CloudNativePG's Secret for the owner kvpool. */
    public String appSecretName() {
        return name() + "-app";
    }

    /** CloudNativePG's Service to the primary. */
    public String readWriteServiceName() {
        return name() + "-rw";
    }

    public GenericKubernetesResource cluster() {
        int instances = managed.instances == null ? 1 : managed.instances;
        if (instances < 1) {
            throw new IllegalArgumentException("spec.engines.postgres.managed.instances must be at least 1");
        }
        ResourceRequirements resources = managed.resources;
        Map<String, Object> spec = Engines.map(
                "instances", instances,
                "imageName", managed.image, // unset: the CloudNativePG operator's default PostgreSQL image
                "storage", Engines.map(
                        "size", Engines.storage(managed, COMPONENT).toString(),
                        "storageClass", managed.storageClassName),
                "resources", resources,
                "bootstrap", Engines.map("initdb", Engines.map("database", DATABASE, "owner", OWNER)),
                // CloudNativePG copies these onto the pods it runs: the pool's NetworkPolicy for PostgreSQL selects them
                "inheritedMetadata", Engines.map("labels", w.selector()));
        return Engines.resource(API_VERSION, KIND, w.metadata(), spec);
    }
}
