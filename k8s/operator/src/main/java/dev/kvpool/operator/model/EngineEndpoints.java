package dev.kvpool.operator.model;

import dev.kvpool.operator.crd.KVPool;
import dev.kvpool.operator.crd.KVPoolSpec;
import io.fabric8.kubernetes.api.model.EnvVar;
import io.fabric8.kubernetes.api.model.Volume;
import io.fabric8.kubernetes.api.model.VolumeBuilder;
import io.fabric8.kubernetes.api.model.VolumeMount;
import io.fabric8.kubernetes.api.model.VolumeMountBuilder;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Pattern;

/**
 * Where each KVPool service finds its engines, as container env (and, for Kafka client settings, a Secret volume):
 * the referenced engines of {@code spec.engines}, or the ones {@link PostgresModel}, {@link KafkaModel} and
 * {@link ValkeyModel} run. Pure. Credentials are only ever {@code secretKeyRef}s, never values.
 *
 * <p>The env names are the ones the services read: the control plane's datasource ({@code QUARKUS_DATASOURCE_*}) and
 * outbox relay ({@code kafka.bootstrap.servers}), the metadata plane's application.properties
 * ({@code KVPOOL_REDIS_URL}, {@code KVPOOL_KAFKA_BOOTSTRAP}), the data agent's {@code kvpool.agent.events.*}
 * mapping, and {@code kvpool.kafka.client-config-dir} that all three read Kafka client properties from.
 */
public final class EngineEndpoints {
    /** Keys of the database Secret named by spec.engines.postgres.secretRef. */
    public static final String DB_URL_KEY = "url";
    public static final String DB_USERNAME_KEY = "username";
    public static final String DB_PASSWORD_KEY = "password";
    /** Keys of the Secret CloudNativePG writes for the application owner ({@code <cluster>-app}). */
    public static final String CNPG_JDBC_URI_KEY = "jdbc-uri";
    public static final String CNPG_USERNAME_KEY = "username";
    public static final String CNPG_PASSWORD_KEY = "password";

    /** The control plane's outbox relay reads {@code kafka.bootstrap.servers}. */
    public static final String CONTROL_PLANE_KAFKA_ENV = "KAFKA_BOOTSTRAP_SERVERS";
    /** The metadata plane's application.properties maps it onto kvpool.meta.events.bootstrap-servers. */
    public static final String METADATA_PLANE_KAFKA_ENV = "KVPOOL_KAFKA_BOOTSTRAP";
    /** The data agent's {@code kvpool.agent.events.bootstrap-servers}, in env form. */
    public static final String DATA_AGENT_KAFKA_ENV = "KVPOOL_AGENT_EVENTS_BOOTSTRAP_SERVERS";
    public static final String REDIS_URL_ENV = "KVPOOL_REDIS_URL";
    /** {@code kvpool.kafka.client-config-dir}: a directory of files, each named after a Kafka client property. */
    public static final String KAFKA_CLIENT_CONFIG_DIR_ENV = "KVPOOL_KAFKA_CLIENT_CONFIG_DIR";
    public static final String KAFKA_CLIENT_CONFIG_VOLUME = "kafka-client";
    public static final String KAFKA_CLIENT_CONFIG_PATH = "/etc/kvpool/kafka-client";

    static final Pattern BOOTSTRAP = Pattern.compile("^[^,\\s]+(,[^,\\s]+)*$");
    static final int MAX_BOOTSTRAP = 2048;

    private final KVPool pool;
    private final KVPoolSpec.Engines engines;

    private EngineEndpoints(KVPool pool) {
        this.pool = pool;
        this.engines = pool.getSpec() == null || pool.getSpec().engines == null
                ? new KVPoolSpec.Engines() : pool.getSpec().engines;
    }

    public static EngineEndpoints of(KVPool pool) {
        Workloads.of(pool, "engines"); // same refusals as the component models
        return new EngineEndpoints(pool);
    }

    /** True when the control plane gets a PostgreSQL (referenced or managed); else it runs on its embedded H2. */
    public boolean postgres() {
        return managedPostgres() || (engines.postgres != null && engines.postgres.secretRef != null);
    }

    public boolean managedPostgres() {
        return engines.postgres != null && engines.postgres.managed != null;
    }

    public boolean managedKafka() {
        return engines.kafka != null && engines.kafka.managed != null;
    }

    public boolean managedRedis() {
        return engines.redis != null && engines.redis.managed != null;
    }

    /** The bootstrap servers: spec.engines.kafka.bootstrap, Strimzi's bootstrap Service when managed, else null. */
    public String kafkaBootstrap() {
        if (managedKafka()) {
            return KafkaModel.of(pool).bootstrap();
        }
        String b = engines.kafka == null ? null : engines.kafka.bootstrap;
        // the CRD's pattern again: a spec that skipped the API server's validation must not reach the env
        if (b != null && (b.length() > MAX_BOOTSTRAP || !BOOTSTRAP.matcher(b).matches())) {
            throw new IllegalArgumentException("spec.engines.kafka.bootstrap must be host:port[,host:port...] "
                    + "without spaces, at most " + MAX_BOOTSTRAP + " characters");
        }
        return b;
    }

    /** The control plane: database (referenced Secret or CloudNativePG's app Secret) and Kafka. */
    public List<EnvVar> controlPlaneEnv() {
        List<EnvVar> env = new ArrayList<>();
        String secret = null;
        String urlKey = DB_URL_KEY;
        String userKey = DB_USERNAME_KEY;
        String passwordKey = DB_PASSWORD_KEY;
        if (managedPostgres()) {
            secret = PostgresModel.of(pool).appSecretName();
            urlKey = CNPG_JDBC_URI_KEY;
            userKey = CNPG_USERNAME_KEY;
            passwordKey = CNPG_PASSWORD_KEY;
        } else if (engines.postgres != null && engines.postgres.secretRef != null) {
            secret = engines.postgres.secretRef.name;
        }
        if (secret != null) {
            // intent only: the image must be built for PostgreSQL (see ControlPlaneModel)
            env.add(Workloads.value("QUARKUS_DATASOURCE_DB_KIND", "postgresql"));
            env.add(Workloads.fromSecret("QUARKUS_DATASOURCE_JDBC_URL", secret, urlKey));
            env.add(Workloads.fromSecret("QUARKUS_DATASOURCE_USERNAME", secret, userKey));
            env.add(Workloads.fromSecret("QUARKUS_DATASOURCE_PASSWORD", secret, passwordKey));
        }
        env.addAll(kafkaEnv(CONTROL_PLANE_KAFKA_ENV));
        return env;
    }

    /** The metadata plane: the shared index's Redis URL (referenced, or the managed Valkey's Secret) and Kafka. */
    public List<EnvVar> metadataPlaneEnv() {
        List<EnvVar> env = new ArrayList<>();
        if (managedRedis()) {
            ValkeyModel v = ValkeyModel.of(pool);
            env.add(Workloads.fromSecret(REDIS_URL_ENV, v.secretName(), ValkeyModel.URL_KEY));
        } else if (engines.redis != null && engines.redis.urlSecretRef != null) {
            env.add(Workloads.fromSecret(REDIS_URL_ENV, engines.redis.urlSecretRef.name,
                    engines.redis.urlSecretRef.key));
        }
        env.addAll(kafkaEnv(METADATA_PLANE_KAFKA_ENV));
        return env;
    }

    /** The data agent's kvpool.blocks producer. */
    public List<EnvVar> dataAgentKafkaEnv() {
        return kafkaEnv(DATA_AGENT_KAFKA_ENV);
    }

    private List<EnvVar> kafkaEnv(String bootstrapEnv) {
        List<EnvVar> env = new ArrayList<>();
        String bootstrap = kafkaBootstrap();
        if (bootstrap != null) {
            env.add(Workloads.value(bootstrapEnv, bootstrap));
        }
        if (kafkaClientSecret() != null) {
            env.add(Workloads.value(KAFKA_CLIENT_CONFIG_DIR_ENV, KAFKA_CLIENT_CONFIG_PATH));
        }
        return env;
    }

    /** The Secret of Kafka client properties (referenced Kafka only; the managed one listens in plain text). */
    String kafkaClientSecret() {
        if (managedKafka() || engines.kafka == null || engines.kafka.secretRef == null) {
            return null;
        }
        return engines.kafka.secretRef.name;
    }

    /**
     * The Kafka client Secret as a read-only volume (one file per key, so a PEM truststore or a JAAS line needs no
     * escaping); empty without spec.engines.kafka.secretRef. World-readable files: the pods run as a non-root user
     * without an fsGroup, and the volume is visible to that pod's containers only.
     */
    public List<Volume> kafkaClientVolumes() {
        String secret = kafkaClientSecret();
        if (secret == null) {
            return List.of();
        }
        return List.of(new VolumeBuilder().withName(KAFKA_CLIENT_CONFIG_VOLUME)
                .withNewSecret().withSecretName(secret).withDefaultMode(0444).endSecret().build());
    }

    public List<VolumeMount> kafkaClientVolumeMounts() {
        if (kafkaClientSecret() == null) {
            return List.of();
        }
        return List.of(new VolumeMountBuilder().withName(KAFKA_CLIENT_CONFIG_VOLUME)
                .withMountPath(KAFKA_CLIENT_CONFIG_PATH).withReadOnly(true).build());
    }
}
