package dev.kvpool.operator.model;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.kvpool.operator.crd.KVPool;
import dev.kvpool.operator.crd.KVPoolSpec;
import io.fabric8.kubernetes.api.model.EnvVar;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.api.model.PodSpec;
import io.fabric8.kubernetes.api.model.Volume;
import io.fabric8.kubernetes.api.model.VolumeMount;
import io.fabric8.kubernetes.api.model.apps.Deployment;
import io.fabric8.kubernetes.api.model.apps.StatefulSet;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/** Where each service finds its engines, referenced and managed, and that no credential is ever inline. */
class EngineEndpointsTest {

    @Test
    void referencedEnginesComeFromTheNamedSecrets() {
        EngineEndpoints e = EngineEndpoints.of(EnginePools.referenced());
        Map<String, EnvVar> cp = EnginePools.byName(e.controlPlaneEnv());
        assertEquals("prod-db", cp.get("QUARKUS_DATASOURCE_JDBC_URL").getValueFrom().getSecretKeyRef().getName());
        assertEquals("url", cp.get("QUARKUS_DATASOURCE_JDBC_URL").getValueFrom().getSecretKeyRef().getKey());
        assertEquals("password", cp.get("QUARKUS_DATASOURCE_PASSWORD").getValueFrom().getSecretKeyRef().getKey());
        assertEquals("kafka-0.kafka:9093,kafka-1.kafka:9093", cp.get("KAFKA_BOOTSTRAP_SERVERS").getValue());
        assertEquals("/etc/kvpool/kafka-client", cp.get("KVPOOL_KAFKA_CLIENT_CONFIG_DIR").getValue());

        Map<String, EnvVar> mp = EnginePools.byName(e.metadataPlaneEnv());
        assertEquals("prod-redis", mp.get("KVPOOL_REDIS_URL").getValueFrom().getSecretKeyRef().getName());
        assertEquals("redis-url", mp.get("KVPOOL_REDIS_URL").getValueFrom().getSecretKeyRef().getKey());
        assertEquals("kafka-0.kafka:9093,kafka-1.kafka:9093", mp.get("KVPOOL_KAFKA_BOOTSTRAP").getValue());
        assertEquals("/etc/kvpool/kafka-client", mp.get("KVPOOL_KAFKA_CLIENT_CONFIG_DIR").getValue());

        Map<String, EnvVar> agent = EnginePools.byName(e.dataAgentKafkaEnv());
        assertEquals(Map.of("KVPOOL_AGENT_EVENTS_BOOTSTRAP_SERVERS", "kafka-0.kafka:9093,kafka-1.kafka:9093",
                "KVPOOL_KAFKA_CLIENT_CONFIG_DIR", "/etc/kvpool/kafka-client"),
                Map.of("KVPOOL_AGENT_EVENTS_BOOTSTRAP_SERVERS",
                        agent.get("KVPOOL_AGENT_EVENTS_BOOTSTRAP_SERVERS").getValue(),
                        "KVPOOL_KAFKA_CLIENT_CONFIG_DIR", agent.get("KVPOOL_KAFKA_CLIENT_CONFIG_DIR").getValue()));
    }

    @Test
    void kafkaClientSecretIsMountedReadOnlyWhereTheEnvPoints() {
        KVPool p = EnginePools.referenced();
        EngineEndpoints e = EngineEndpoints.of(p);
        Volume v = e.kafkaClientVolumes().getFirst();
        assertEquals("prod-kafka-client", v.getSecret().getSecretName());
        VolumeMount m = e.kafkaClientVolumeMounts().getFirst();
        assertEquals(v.getName(), m.getName());
        assertTrue(m.getReadOnly());
        for (Deployment d : List.of(ControlPlaneModel.of(p).deployment(), MetadataPlaneModel.of(p).deployment())) {
            PodSpec pod = d.getSpec().getTemplate().getSpec();
            assertTrue(pod.getVolumes().contains(v), d.getMetadata().getName());
            assertTrue(pod.getContainers().getFirst().getVolumeMounts().contains(m), d.getMetadata().getName());
            assertEquals(m.getMountPath(), EnginePools.env(d).get("KVPOOL_KAFKA_CLIENT_CONFIG_DIR").getValue());
            // the writable volumes are still there
            ControlPlaneModelTest.assertWritableTmpAndDataDir(d);
        }
    }

    @Test
    void withoutAClientSecretNothingIsMounted() {
        KVPool p = EnginePools.referenced();
        p.getSpec().engines.kafka.secretRef = null;
        EngineEndpoints e = EngineEndpoints.of(p);
        assertTrue(e.kafkaClientVolumes().isEmpty());
        assertTrue(e.kafkaClientVolumeMounts().isEmpty());
        assertNull(EnginePools.byName(e.controlPlaneEnv()).get("KVPOOL_KAFKA_CLIENT_CONFIG_DIR"));
        assertEquals(Workloads.volumes(), ControlPlaneModel.of(p).deployment().getSpec().getTemplate().getSpec()
                .getVolumes());
    }

    @Test
    void managedEnginesComeFromTheirOperatorsSecretsAndServices() {
        KVPool p = EnginePools.managed();
        EngineEndpoints e = EngineEndpoints.of(p);
        Map<String, EnvVar> cp = EnginePools.byName(e.controlPlaneEnv());
        for (var k : Map.of("QUARKUS_DATASOURCE_JDBC_URL", "jdbc-uri", "QUARKUS_DATASOURCE_USERNAME", "username",
                "QUARKUS_DATASOURCE_PASSWORD", "password").entrySet()) {
            assertEquals(PostgresModel.of(p).appSecretName(), cp.get(k.getKey()).getValueFrom().getSecretKeyRef()
                    .getName());
            assertEquals(k.getValue(), cp.get(k.getKey()).getValueFrom().getSecretKeyRef().getKey());
        }
        assertEquals("prod-kafka-kafka-bootstrap:9092", cp.get("KAFKA_BOOTSTRAP_SERVERS").getValue());
        assertNull(cp.get("KVPOOL_KAFKA_CLIENT_CONFIG_DIR"), "the managed Kafka listens in plain text");

        Map<String, EnvVar> mp = EnginePools.byName(e.metadataPlaneEnv());
        assertEquals("prod-valkey", mp.get("KVPOOL_REDIS_URL").getValueFrom().getSecretKeyRef().getName());
        assertEquals("url", mp.get("KVPOOL_REDIS_URL").getValueFrom().getSecretKeyRef().getKey());
        assertEquals("prod-kafka-kafka-bootstrap:9092", mp.get("KVPOOL_KAFKA_BOOTSTRAP").getValue());
        assertEquals("prod-kafka-kafka-bootstrap:9092",
                EnginePools.byName(e.dataAgentKafkaEnv()).get("KVPOOL_AGENT_EVENTS_BOOTSTRAP_SERVERS").getValue());
        assertTrue(e.kafkaClientVolumes().isEmpty());
    }

    @Test
    void theManagedValkeySecretHoldsTheUrlTheMetadataPlaneReads() {
        KVPool p = EnginePools.managed();
        String pw = "a".repeat(43);
        var secret = PoolModel.of(p).createOnce(() -> pw).getFirst();
        EnvVar url = EnginePools.byName(EngineEndpoints.of(p).metadataPlaneEnv()).get("KVPOOL_REDIS_URL");
        assertEquals(secret.getMetadata().getName(), url.getValueFrom().getSecretKeyRef().getName());
        String value = secret.getStringData().get(url.getValueFrom().getSecretKeyRef().getKey());
        assertEquals("redis://:" + pw + "@" + ValkeyModel.of(p).service().getMetadata().getName() + ":6379", value);
    }

    @Test
    void mixedEnginesEachFromItsOwnSource() {
        KVPool p = EnginePools.referenced();
        p.getSpec().engines.postgres.secretRef = null;
        p.getSpec().engines.postgres.managed = new KVPoolSpec.ManagedPostgres();
        p.getSpec().engines.redis.urlSecretRef = null;
        p.getSpec().engines.redis.managed = new KVPoolSpec.ManagedRedis();
        EngineEndpoints e = EngineEndpoints.of(p);
        Map<String, EnvVar> cp = EnginePools.byName(e.controlPlaneEnv());
        assertEquals("prod-postgres-app", cp.get("QUARKUS_DATASOURCE_JDBC_URL").getValueFrom().getSecretKeyRef()
                .getName());
        assertEquals("kafka-0.kafka:9093,kafka-1.kafka:9093", cp.get("KAFKA_BOOTSTRAP_SERVERS").getValue());
        assertEquals("/etc/kvpool/kafka-client", cp.get("KVPOOL_KAFKA_CLIENT_CONFIG_DIR").getValue());
        assertEquals("prod-valkey", EnginePools.byName(e.metadataPlaneEnv()).get("KVPOOL_REDIS_URL").getValueFrom()
                .getSecretKeyRef().getName());
        // managed Kafka, referenced database and Redis
        KVPool q = EnginePools.referenced();
        q.getSpec().engines.kafka.bootstrap = null;
        q.getSpec().engines.kafka.secretRef = null;
        q.getSpec().engines.kafka.managed = new KVPoolSpec.ManagedKafka();
        EngineEndpoints f = EngineEndpoints.of(q);
        assertEquals("prod-db", EnginePools.byName(f.controlPlaneEnv()).get("QUARKUS_DATASOURCE_PASSWORD")
                .getValueFrom().getSecretKeyRef().getName());
        assertEquals("prod-kafka-kafka-bootstrap:9092",
                EnginePools.byName(f.metadataPlaneEnv()).get("KVPOOL_KAFKA_BOOTSTRAP").getValue());
        assertEquals("prod-redis", EnginePools.byName(f.metadataPlaneEnv()).get("KVPOOL_REDIS_URL").getValueFrom()
                .getSecretKeyRef().getName());
    }

    /** Every env var in every container of every object: secrets only by reference, in every mode. */
    @Test
    void noPasswordIsEverInline() {
        for (KVPool p : List.of(EnginePools.referenced(), EnginePools.managed())) {
            for (HasMetadata o : PoolModel.of(p).desired()) {
                PodSpec pod = o instanceof Deployment d ? d.getSpec().getTemplate().getSpec()
                        : o instanceof StatefulSet s ? s.getSpec().getTemplate().getSpec() : null;
                if (pod == null) {
                    continue;
                }
                for (var c : pod.getContainers()) {
                    for (EnvVar v : c.getEnv()) {
                        String n = v.getName().toUpperCase();
                        if (n.contains("PASSWORD") || n.contains("AUTH") || n.endsWith("_URL") && n.contains("REDIS")
                                || n.endsWith("JDBC_URL") || n.endsWith("_USER") || n.endsWith("USERNAME")) {
                            assertNull(v.getValue(), o.getMetadata().getName() + " " + v.getName() + " inline");
                            assertNotNull(v.getValueFrom().getSecretKeyRef(), v.getName());
                        }
                    }
                    assertFalse(String.join(" ", c.getArgs()).matches(".*--requirepass [A-Za-z0-9_-]{8,}.*"),
                            "a password in the args of " + o.getMetadata().getName());
                }
            }
        }
    }

    /** The env names are the ones the services' configuration reads (their application.properties, in this repo). */
    @Test
    void envNamesAreTheOnesTheServicesRead() throws IOException {
        String meta = Files.readString(Path.of("../../metadata-plane/src/main/resources/application.properties"));
        assertTrue(meta.contains("${" + EngineEndpoints.METADATA_PLANE_KAFKA_ENV + ":"), meta);
        assertTrue(meta.contains("${" + EngineEndpoints.REDIS_URL_ENV + ":"));
        assertTrue(meta.contains("${" + EngineEndpoints.KAFKA_CLIENT_CONFIG_DIR_ENV + ":"));
        for (String service : List.of("control-plane", "data-agent")) {
            String props = Files.readString(Path.of("../../" + service + "/src/main/resources/application.properties"));
            assertTrue(props.contains("${" + EngineEndpoints.KAFKA_CLIENT_CONFIG_DIR_ENV + ":"), service);
        }
        // the control plane's relay reads kafka.bootstrap.servers, the agent kvpool.agent.events.bootstrap-servers:
        // both through SmallRye's env mapping (upper case, non-alphanumerics as _)
        assertEquals(EngineEndpoints.CONTROL_PLANE_KAFKA_ENV, envForm("kafka.bootstrap.servers"));
        assertEquals(EngineEndpoints.DATA_AGENT_KAFKA_ENV, envForm("kvpool.agent.events.bootstrap-servers"));
        String relay = Files.readString(Path.of(
                "../../control-plane/src/main/java/dev/kvpool/control/outbox/OutboxRelay.java"));
        assertTrue(relay.contains("@ConfigProperty(name = \"kafka.bootstrap.servers\")"));
        try (Stream<String> lines = Files.lines(Path.of(
                "../../data-agent/src/main/java/dev/kvpool/agent/api/AgentConfig.java"))) {
            List<String> l = lines.map(String::trim).toList();
            assertTrue(l.contains("@ConfigMapping(prefix = \"kvpool.agent\")"));
            assertTrue(l.contains("Events events();"));
            assertTrue(l.contains("Optional<String> bootstrapServers();"));
        }
    }

    static String envForm(String property) {
        return property.toUpperCase().replaceAll("[^A-Z0-9]", "_");
    }

    @Test
    void refusesABootstrapTheCrdWouldRefuse() throws NoSuchFieldException {
        var field = KVPoolSpec.Kafka.class.getField("bootstrap");
        assertEquals(field.getAnnotation(io.fabric8.generator.annotation.Pattern.class).value(),
                EngineEndpoints.BOOTSTRAP.pattern(), "the same pattern as the CRD");
        assertEquals(field.getAnnotation(io.fabric8.generator.annotation.Size.class).max(),
                EngineEndpoints.MAX_BOOTSTRAP);
        for (String bad : List.of("a:1, b:2", "a:1,,b:2", "x".repeat(2049), "a:1\nKVPOOL_X=y")) {
            KVPool p = EnginePools.referenced();
            p.getSpec().engines.kafka.bootstrap = bad;
            assertThrows(IllegalArgumentException.class, () -> EngineEndpoints.of(p).controlPlaneEnv(), bad);
        }
    }

    @Test
    void refusesAPoolWithoutNameOrVersion() {
        KVPool p = EnginePools.managed();
        p.getSpec().version = null;
        assertThrows(IllegalArgumentException.class, () -> EngineEndpoints.of(p));
    }

    @Test
    void isDeterministic() {
        assertEquals(EngineEndpoints.of(EnginePools.referenced()).controlPlaneEnv(),
                EngineEndpoints.of(EnginePools.referenced()).controlPlaneEnv());
        assertEquals(EngineEndpoints.of(EnginePools.managed()).metadataPlaneEnv(),
                EngineEndpoints.of(EnginePools.managed()).metadataPlaneEnv());
    }
}
