package dev.kvpool.operator.reconciler;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.kvpool.operator.crd.KVPool;
import dev.kvpool.operator.crd.KVPoolSpec;
import io.fabric8.kubernetes.api.model.EnvVar;
import io.fabric8.kubernetes.api.model.GenericKubernetesResource;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.api.model.ObjectMetaBuilder;
import io.fabric8.kubernetes.api.model.apiextensions.v1.CustomResourceDefinition;
import io.fabric8.kubernetes.api.model.apiextensions.v1.CustomResourceDefinitionBuilder;
import io.fabric8.kubernetes.api.model.apps.Deployment;
import io.fabric8.kubernetes.api.model.apps.StatefulSet;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.quarkus.test.junit.QuarkusTest;
import io.quarkus.test.kubernetes.client.WithKubernetesTestServer;
import jakarta.inject.Inject;
import java.util.Map;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/**
 * A KVPool with managed engines through the real reconciler, against the fabric8 mock server in CRUD mode with the
 * CloudNativePG and Strimzi CRDs registered (their operators cannot run here: the objects are checked, not served).
 */
@QuarkusTest
@WithKubernetesTestServer(crud = true)
class ManagedEnginesReconcileTest {
    static final String NS = "kvpool-engines";

    @Inject
    KubernetesClient client;

    /** A namespaced CRD that takes any spec: enough for the mock server to know the kind and its plural. */
    static CustomResourceDefinition crd(String group, String version, String kind, String plural) {
        return new CustomResourceDefinitionBuilder()
                .withNewMetadata().withName(plural + "." + group).endMetadata()
                .withNewSpec()
                    .withGroup(group)
                    .withScope("Namespaced")
                    .withNewNames().withKind(kind).withPlural(plural).withSingular(kind.toLowerCase()).endNames()
                    .addNewVersion().withName(version).withServed(true).withStorage(true)
                        .withNewSchema().withNewOpenAPIV3Schema().withType("object")
                            .withXKubernetesPreserveUnknownFields(true).endOpenAPIV3Schema().endSchema()
                    .endVersion()
                .endSpec()
                .build();
    }

    @Test
    void managedEnginesAreAppliedOwnedAndWiredIntoThePlanes() {
        for (CustomResourceDefinition c : new CustomResourceDefinition[] {
                crd("postgresql.cnpg.io", "v1", "Cluster", "clusters"),
                crd("kafka.strimzi.io", "v1", "Kafka", "kafkas"),
                crd("kafka.strimzi.io", "v1", "KafkaNodePool", "kafkanodepools"),
                crd("kafka.strimzi.io", "v1", "KafkaTopic", "kafkatopics")}) {
            client.apiextensions().v1().customResourceDefinitions().resource(c).create();
        }
        KVPool pool = new KVPool();
        pool.setMetadata(new ObjectMetaBuilder().withName("eng").withNamespace(NS).build());
        KVPoolSpec spec = new KVPoolSpec();
        spec.version = "0.4.2";
        spec.engines = new KVPoolSpec.Engines();
        spec.engines.postgres = new KVPoolSpec.Postgres();
        spec.engines.postgres.managed = new KVPoolSpec.ManagedPostgres();
        spec.engines.kafka = new KVPoolSpec.Kafka();
        spec.engines.kafka.managed = new KVPoolSpec.ManagedKafka();
        spec.engines.redis = new KVPoolSpec.Redis();
        spec.engines.redis.managed = new KVPoolSpec.ManagedRedis();
        pool.setSpec(spec);
        client.resource(pool).create();

        GenericKubernetesResource cluster = KVPoolReconcilerTest.await(() -> client
                .genericKubernetesResources("postgresql.cnpg.io/v1", "Cluster").inNamespace(NS)
                .withName("eng-postgres").get());
        assertOwned(cluster);
        assertEquals(Map.of("initdb", Map.of("database", "kvpool", "owner", "kvpool")),
                cluster.getAdditionalProperties().get("spec") instanceof Map<?, ?> m ? m.get("bootstrap") : null);
        assertOwned(KVPoolReconcilerTest.await(() -> client.genericKubernetesResources("kafka.strimzi.io/v1", "Kafka")
                .inNamespace(NS).withName("eng-kafka").get()));
        assertOwned(KVPoolReconcilerTest.await(() -> client
                .genericKubernetesResources("kafka.strimzi.io/v1", "KafkaNodePool").inNamespace(NS).withName("eng")
                .get()));
        for (String topic : new String[] {"eng-kvpool-config", "eng-kvpool-cache", "eng-kvpool-blocks"}) {
            assertOwned(KVPoolReconcilerTest.await(() -> client
                    .genericKubernetesResources("kafka.strimzi.io/v1", "KafkaTopic").inNamespace(NS).withName(topic)
                    .get()));
        }
        StatefulSet valkey = KVPoolReconcilerTest.await(() -> client.apps().statefulSets().inNamespace(NS)
                .withName("eng-valkey").get());
        assertOwned(valkey);
        assertOwned(KVPoolReconcilerTest.await(() -> client.services().inNamespace(NS).withName("eng-valkey").get()));

        // the planes point at them
        Deployment cp = KVPoolReconcilerTest.await(() -> client.apps().deployments().inNamespace(NS)
                .withName("eng-control-plane").get());
        Map<String, EnvVar> env = cp.getSpec().getTemplate().getSpec().getContainers().getFirst().getEnv().stream()
                .collect(Collectors.toMap(EnvVar::getName, e -> e));
        assertEquals("eng-postgres-app", env.get("QUARKUS_DATASOURCE_JDBC_URL").getValueFrom().getSecretKeyRef()
                .getName());
        assertEquals("eng-kafka-kafka-bootstrap:9092", env.get("KAFKA_BOOTSTRAP_SERVERS").getValue());
        Deployment mp = KVPoolReconcilerTest.await(() -> client.apps().deployments().inNamespace(NS)
                .withName("eng-metadata-plane").get());
        assertTrue(mp.getSpec().getTemplate().getSpec().getContainers().getFirst().getEnv().stream()
                .anyMatch(e -> e.getName().equals("KVPOOL_REDIS_URL")
                        && "eng-valkey".equals(e.getValueFrom().getSecretKeyRef().getName())));
    }

    static void assertOwned(HasMetadata o) {
        var ref = o.getMetadata().getOwnerReferences().getFirst();
        assertEquals("KVPool", ref.getKind(), o.getKind() + " " + o.getMetadata().getName());
        assertEquals("eng", ref.getName());
        assertTrue(ref.getController());
    }
}
