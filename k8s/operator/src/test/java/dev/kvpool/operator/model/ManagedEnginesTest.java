package dev.kvpool.operator.model;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.kvpool.api.events.Topics;
import dev.kvpool.operator.crd.KVPool;
import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.GenericKubernetesResource;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.api.model.PodSpec;
import io.fabric8.kubernetes.api.model.Quantity;
import io.fabric8.kubernetes.api.model.ResourceRequirementsBuilder;
import io.fabric8.kubernetes.api.model.Secret;
import io.fabric8.kubernetes.api.model.Service;
import io.fabric8.kubernetes.api.model.apps.StatefulSet;
import io.fabric8.kubernetes.client.utils.KubernetesSerialization;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/** The managed engines' objects: CloudNativePG, Strimzi and Valkey, without any Kubernetes. */
class ManagedEnginesTest {

    @SuppressWarnings("unchecked")
    static Map<String, Object> spec(GenericKubernetesResource r) {
        return (Map<String, Object>) r.getAdditionalProperties().get("spec");
    }

    @SuppressWarnings("unchecked")
    static Map<String, Object> at(Map<String, Object> m, String key) {
        return (Map<String, Object>) m.get(key);
    }

    static void assertOwnedByThePool(HasMetadata o) {
        var ref = o.getMetadata().getOwnerReferences().getFirst();
        assertEquals("KVPool", ref.getKind(), o.getMetadata().getName());
        assertEquals("prod", ref.getName());
        assertEquals("uid-1", ref.getUid());
        assertTrue(ref.getController());
        assertEquals("llm", o.getMetadata().getNamespace());
        assertEquals("prod", o.getMetadata().getLabels().get("app.kubernetes.io/instance"));
    }

    // ---- CloudNativePG ----------------------------------------------------------------------------------------

    @Test
    void postgresIsACloudNativePgClusterWithTheKvpoolDatabase() {
        GenericKubernetesResource c = PostgresModel.of(EnginePools.managed()).cluster();
        assertEquals("postgresql.cnpg.io/v1", c.getApiVersion());
        assertEquals("Cluster", c.getKind());
        assertEquals("prod-postgres", c.getMetadata().getName());
        assertOwnedByThePool(c);
        Map<String, Object> spec = spec(c);
        assertEquals(1, spec.get("instances"));
        assertEquals(Map.of("size", "10Gi"), spec.get("storage"));
        assertEquals(Map.of("initdb", Map.of("database", "kvpool", "owner", "kvpool")), spec.get("bootstrap"));
        assertFalse(spec.containsKey("imageName"), "the CloudNativePG operator's default image");
        assertEquals("prod-postgres-app", PostgresModel.of(EnginePools.managed()).appSecretName());
    }

    @Test
    void postgresTakesInstancesStorageImageAndResources() {
        KVPool p = EnginePools.managed();
        var m = p.getSpec().engines.postgres.managed;
        m.instances = 3;
        m.storage = new Quantity("50Gi");
        m.storageClassName = "fast-ssd";
        m.image = "ghcr.io/cloudnative-pg/postgresql:17.5";
        m.resources = new ResourceRequirementsBuilder().addToLimits("memory", new Quantity("2Gi")).build();
        Map<String, Object> spec = spec(PostgresModel.of(p).cluster());
        assertEquals(3, spec.get("instances"));
        assertEquals(Map.of("size", "50Gi", "storageClass", "fast-ssd"), spec.get("storage"));
        assertEquals("ghcr.io/cloudnative-pg/postgresql:17.5", spec.get("imageName"));
        assertEquals(m.resources, spec.get("resources"));
    }

    @Test
    void storageOfZeroOrLessIsRefused() {
        KVPool p = EnginePools.managed();
        p.getSpec().engines.postgres.managed.storage = new Quantity("0");
        var e = assertThrows(IllegalArgumentException.class, () -> PostgresModel.of(p).cluster());
        assertTrue(e.getMessage().contains("spec.engines.postgres.managed.storage"), e.getMessage());
        KVPool q = EnginePools.managed();
        q.getSpec().engines.kafka.managed.storage = new Quantity("-1Gi");
        assertThrows(IllegalArgumentException.class, () -> KafkaModel.of(q).nodePool());
        KVPool r = EnginePools.managed();
        r.getSpec().engines.kafka.managed.replicas = 0;
        assertThrows(IllegalArgumentException.class, () -> KafkaModel.of(r).kafka());
    }

    /** What the reconciler sends: the nested fabric8 types serialize to the plain YAML of the CRD's fields. */
    @Test
    void engineResourcesSerializeAsPlainYaml() {
        KVPool p = EnginePools.managed();
        p.getSpec().engines.postgres.managed.resources = new ResourceRequirementsBuilder()
                .addToLimits("memory", new Quantity("2Gi")).build();
        KubernetesSerialization json = new KubernetesSerialization();
        String yaml = json.asYaml(PostgresModel.of(p).cluster());
        assertTrue(yaml.contains("apiVersion: \"postgresql.cnpg.io/v1\""), yaml);
        GenericKubernetesResource back = json.unmarshal(yaml, GenericKubernetesResource.class);
        assertEquals("2Gi", at(at(spec(back), "resources"), "limits").get("memory"));
        assertEquals("kvpool", at(at(spec(back), "bootstrap"), "initdb").get("owner"));
        for (GenericKubernetesResource r : List.of(KafkaModel.of(p).kafka(), KafkaModel.of(p).nodePool())) {
            GenericKubernetesResource again = json.unmarshal(json.asYaml(r), GenericKubernetesResource.class);
            assertEquals(json.asJson(r), json.asJson(again), r.getKind());
        }
    }

    // ---- Strimzi ----------------------------------------------------------------------------------------------

    @Test
    void kafkaIsAStrimziKraftClusterWithADualRoleNodePool() {
        KafkaModel m = KafkaModel.of(EnginePools.managed());
        GenericKubernetesResource k = m.kafka();
        assertEquals("kafka.strimzi.io/v1", k.getApiVersion());
        assertEquals("Kafka", k.getKind());
        assertEquals("prod-kafka", k.getMetadata().getName());
        assertTrue(k.getMetadata().getAnnotations() == null || k.getMetadata().getAnnotations().isEmpty(),
                "no v1beta2-era strimzi.io/kraft or node-pools annotations");
        assertOwnedByThePool(k);
        Map<String, Object> kafka = at(spec(k), "kafka");
        assertFalse(kafka.containsKey("version"), "the Strimzi operator's default Kafka");
        assertEquals(List.of(Map.of("name", "plain", "port", 9092, "type", "internal", "tls", false)),
                kafka.get("listeners"));
        Map<String, Object> config = at(kafka, "config");
        assertEquals(1, config.get("default.replication.factor"));
        assertEquals(1, config.get("min.insync.replicas"));
        assertEquals(false, config.get("auto.create.topics.enable"));
        assertEquals(Map.of(), at(spec(k), "entityOperator").get("topicOperator"), "KafkaTopics need it");

        GenericKubernetesResource pool = m.nodePool();
        assertEquals("KafkaNodePool", pool.getKind());
        assertEquals("kafka.strimzi.io/v1", pool.getApiVersion());
        assertEquals("prod-kafka", pool.getMetadata().getLabels().get("strimzi.io/cluster"));
        assertOwnedByThePool(pool);
        Map<String, Object> ps = spec(pool);
        assertEquals(1, ps.get("replicas"));
        assertEquals(List.of("controller", "broker"), ps.get("roles"));
        Map<String, Object> storage = at(ps, "storage");
        assertEquals("jbod", storage.get("type"));
        assertEquals(List.of(Map.of("id", 0, "type", "persistent-claim", "size", "10Gi", "kraftMetadata", "shared",
                "deleteClaim", false)), storage.get("volumes"));
        assertEquals("prod-kafka-kafka-bootstrap:9092", m.bootstrap());
    }

    @Test
    void threeKafkaNodesReplicateEveryPartitionThreeTimes() {
        KVPool p = EnginePools.managed();
        var mk = p.getSpec().engines.kafka.managed;
        mk.replicas = 5;
        mk.version = "3.9.0";
        mk.metadataVersion = "3.9-IV0";
        mk.storage = new Quantity("100Gi");
        mk.storageClassName = "fast-ssd";
        KafkaModel m = KafkaModel.of(p);
        Map<String, Object> kafka = at(spec(m.kafka()), "kafka");
        assertEquals("3.9.0", kafka.get("version"));
        assertEquals("3.9-IV0", kafka.get("metadataVersion"));
        assertEquals(3, at(kafka, "config").get("default.replication.factor"));
        assertEquals(2, at(kafka, "config").get("min.insync.replicas"));
        assertEquals(2, at(kafka, "config").get("transaction.state.log.min.isr"));
        Map<String, Object> ps = spec(m.nodePool());
        assertEquals(5, ps.get("replicas"));
        @SuppressWarnings("unchecked")
        Map<String, Object> vol = ((List<Map<String, Object>>) at(ps, "storage").get("volumes")).getFirst();
        assertEquals("100Gi", vol.get("size"));
        assertEquals("fast-ssd", vol.get("class"));
        for (GenericKubernetesResource t : m.topics()) {
            assertEquals(3, spec(t).get("replicas"));
        }
        mk.replicas = 2;
        assertEquals(1, at(at(spec(KafkaModel.of(p).kafka()), "kafka"), "config").get("min.insync.replicas"));
        assertEquals(2, at(at(spec(KafkaModel.of(p).kafka()), "kafka"), "config").get("default.replication.factor"));
    }

    @Test
    void kafkaPodNamesFitInADnsLabel() {
        KafkaModel m = KafkaModel.of(EnginePools.managed());
        assertEquals("prod", m.nodePoolName());
        KVPool fits = EnginePools.managed();
        fits.getMetadata().setName("p".repeat(26)); // pods p…p-kafka-p…p-NN: 26 + 7 + 26 + 3 = 62
        KafkaModel.of(fits).nodePool();
        KVPool tooLong = EnginePools.managed();
        tooLong.getMetadata().setName("p".repeat(27)); // 27 + 7 + 27 + 3 = 64
        var e = assertThrows(IllegalArgumentException.class, () -> KafkaModel.of(tooLong).kafka());
        assertTrue(e.getMessage().contains("at most 26 characters"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> PoolModel.of(tooLong).desired());
        // referenced Kafka: no such limit from Strimzi
        KVPool referenced = EnginePools.referenced();
        referenced.getMetadata().setName("p".repeat(27));
        PoolModel.of(referenced).desired();
    }

    /** The topic names are the ones the services produce to and consume from (dev.kvpool.api.events.Topics). */
    @Test
    void topicsAreTheServicesStreams() {
        KafkaModel m = KafkaModel.of(EnginePools.managed());
        List<GenericKubernetesResource> topics = m.topics();
        assertEquals(Set.of(Topics.CONFIG, Topics.CACHE, Topics.BLOCKS),
                topics.stream().map(t -> (String) spec(t).get("topicName")).collect(Collectors.toSet()));
        assertEquals(3, topics.size());
        for (GenericKubernetesResource t : topics) {
            assertEquals("KafkaTopic", t.getKind());
            assertEquals("kafka.strimzi.io/v1", t.getApiVersion());
            assertEquals("prod-kafka", t.getMetadata().getLabels().get("strimzi.io/cluster"));
            assertOwnedByThePool(t);
            String topic = (String) spec(t).get("topicName");
            assertEquals("prod-" + topic.replace('.', '-'), t.getMetadata().getName());
            assertTrue(t.getMetadata().getName().matches("^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"));
            assertEquals("delete", at(spec(t), "config").get("cleanup.policy"));
        }
        Map<String, Integer> partitions = topics.stream().collect(Collectors.toMap(
                t -> (String) spec(t).get("topicName"), t -> (Integer) spec(t).get("partitions")));
        assertEquals(1, partitions.get(Topics.CONFIG), "one total order of configuration changes");
        assertTrue(partitions.get(Topics.CACHE) > 1);
        assertTrue(partitions.get(Topics.BLOCKS) > 1);
    }

    // ---- Valkey -----------------------------------------------------------------------------------------------

    @Test
    void valkeyRunsNonRootReadOnlyWithAClaimAndPingProbes() {
        ValkeyModel m = ValkeyModel.of(EnginePools.managed());
        StatefulSet s = m.statefulSet();
        assertEquals("prod-valkey", s.getMetadata().getName());
        assertOwnedByThePool(s);
        assertEquals(1, s.getSpec().getReplicas());
        assertEquals("prod-valkey-headless", s.getSpec().getServiceName());
        PodSpec pod = s.getSpec().getTemplate().getSpec();
        assertTrue(pod.getSecurityContext().getRunAsNonRoot());
        assertEquals(999L, pod.getSecurityContext().getRunAsUser());
        assertEquals(999L, pod.getSecurityContext().getFsGroup());
        Container c = pod.getContainers().getFirst();
        assertEquals("docker.io/valkey/valkey:8.1", c.getImage());
        assertTrue(c.getSecurityContext().getReadOnlyRootFilesystem());
        assertEquals(false, c.getSecurityContext().getAllowPrivilegeEscalation());
        assertEquals("ALL", c.getSecurityContext().getCapabilities().getDrop().getFirst());
        assertEquals("/data", c.getVolumeMounts().getFirst().getMountPath());
        var claim = s.getSpec().getVolumeClaimTemplates().getFirst();
        assertEquals(c.getVolumeMounts().getFirst().getName(), claim.getMetadata().getName());
        assertEquals(new Quantity("10Gi"), claim.getSpec().getResources().getRequests().get("storage"));
        assertEquals(List.of("ReadWriteOnce"), claim.getSpec().getAccessModes());
        assertNull(claim.getSpec().getStorageClassName());
        for (var probe : List.of(c.getStartupProbe(), c.getReadinessProbe(), c.getLivenessProbe())) {
            assertTrue(String.join(" ", probe.getExec().getCommand()).contains("valkey-cli"));
            assertTrue(String.join(" ", probe.getExec().getCommand()).contains("ping | grep -q PONG"));
        }
        // the probes authenticate from REDISCLI_AUTH, the server from VALKEY_PASSWORD: both from the Secret
        Map<String, String> fromSecret = c.getEnv().stream().collect(Collectors.toMap(e -> e.getName(),
                e -> e.getValueFrom().getSecretKeyRef().getName() + "/" + e.getValueFrom().getSecretKeyRef().getKey()));
        assertEquals(Map.of("VALKEY_PASSWORD", "prod-valkey/password", "REDISCLI_AUTH", "prod-valkey/password"),
                fromSecret);
    }

    @Test
    void valkeyPersistsEverySecondAndNeverEvicts() {
        List<String> args = ValkeyModel.of(EnginePools.managed()).statefulSet().getSpec().getTemplate().getSpec()
                .getContainers().getFirst().getArgs();
        assertEquals("yes", after(args, "--appendonly"));
        assertEquals("everysec", after(args, "--appendfsync"));
        assertEquals("noeviction", after(args, "--maxmemory-policy"));
        assertEquals("/data", after(args, "--dir"));
        assertEquals("$(VALKEY_PASSWORD)", after(args, "--requirepass"));
        assertFalse(args.contains("--save"), "RDB snapshots stay at their defaults, besides the AOF");
    }

    static String after(List<String> args, String flag) {
        int i = args.indexOf(flag);
        assertTrue(i >= 0 && i + 1 < args.size(), flag);
        return args.get(i + 1);
    }

    @Test
    void valkeyServicesSelectItsPod() {
        ValkeyModel m = ValkeyModel.of(EnginePools.managed());
        Service client = m.service();
        Service headless = m.headlessService();
        assertEquals("prod-valkey", client.getMetadata().getName());
        assertEquals("ClusterIP", client.getSpec().getType());
        assertEquals("None", headless.getSpec().getClusterIP());
        var selector = m.statefulSet().getSpec().getSelector().getMatchLabels();
        assertEquals(selector, client.getSpec().getSelector());
        assertEquals(selector, headless.getSpec().getSelector());
        assertEquals(6379, client.getSpec().getPorts().getFirst().getPort());
        assertOwnedByThePool(client);
        assertOwnedByThePool(headless);
    }

    @Test
    void valkeyTakesImageStorageClassAndResources() {
        KVPool p = EnginePools.managed();
        var mr = p.getSpec().engines.redis.managed;
        mr.image = "registry.local/valkey:8.1.3";
        mr.storage = new Quantity("20Gi");
        mr.storageClassName = "fast-ssd";
        StatefulSet s = ValkeyModel.of(p).statefulSet();
        Container c = s.getSpec().getTemplate().getSpec().getContainers().getFirst();
        assertEquals("registry.local/valkey:8.1.3", c.getImage());
        var claim = s.getSpec().getVolumeClaimTemplates().getFirst();
        assertEquals("fast-ssd", claim.getSpec().getStorageClassName());
        assertEquals(new Quantity("20Gi"), claim.getSpec().getResources().getRequests().get("storage"));
    }

    @Test
    void valkeyServiceNamesFitInADnsLabel() {
        KVPool fits = EnginePools.managed();
        fits.getMetadata().setName("v".repeat(47));
        assertEquals(63, ValkeyModel.of(fits).headlessService().getMetadata().getName().length());
        KVPool tooLong = EnginePools.managed();
        tooLong.getMetadata().setName("v".repeat(48));
        var e = assertThrows(IllegalArgumentException.class, () -> ValkeyModel.of(tooLong));
        assertTrue(e.getMessage().contains("at most 47 characters"), e.getMessage());
    }

    @Test
    void valkeySecretTakesAGivenSafePasswordOnly() {
        ValkeyModel m = ValkeyModel.of(EnginePools.managed());
        String pw = ValkeyModel.newPassword();
        assertEquals(43, pw.length());
        assertTrue(pw.matches("[A-Za-z0-9_-]+"));
        assertFalse(pw.equals(ValkeyModel.newPassword()));
        Secret s = m.secret(pw);
        assertEquals("prod-valkey", s.getMetadata().getName());
        assertOwnedByThePool(s);
        assertEquals(pw, s.getStringData().get("password"));
        assertEquals("redis://:" + pw + "@prod-valkey:6379", s.getStringData().get("url"));
        assertEquals(m.secret(pw), m.secret(pw));
        for (String bad : List.of("short", "x".repeat(31), "a b".repeat(20), "pw@host:1/".repeat(5), "")) {
            assertThrows(IllegalArgumentException.class, () -> m.secret(bad), bad);
        }
        assertThrows(IllegalArgumentException.class, () -> m.secret(null));
    }
}
