package dev.kvpool.operator.model;

import dev.kvpool.operator.crd.KVPool;
import dev.kvpool.operator.crd.KVPoolSpec;
import io.fabric8.kubernetes.api.model.GenericKubernetesResource;
import io.fabric8.kubernetes.api.model.ObjectMeta;
import io.fabric8.kubernetes.api.model.ObjectMetaBuilder;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The managed Kafka of a {@link KVPool}: a Strimzi {@code kafka.strimzi.io/v1 Kafka} {@code <pool>-kafka} in KRaft
 * mode, one {@code KafkaNodePool} of nodes that are both controller and broker, and a {@code KafkaTopic} for each of
 * KVPool's streams. Pure.
 *
 * <p>API version {@code v1}, not {@code v1beta2}: Strimzi 0.49 introduced {@code v1} and Strimzi 1.0 removed
 * {@code v1beta2} (release notes of 0.49.0 and 1.0.0), so {@code v1} is the one version every supported Strimzi
 * serves (0.49 and later). Since 0.46 Strimzi runs KRaft with node pools only, so the {@code strimzi.io/kraft} and
 * {@code strimzi.io/node-pools} annotations that v1beta2-era clusters needed are gone. Field names checked against
 * strimzi-kafka-operator {@code packaging/examples/kafka/kafka-with-dual-role-nodes.yaml} (v1: {@code spec.kafka.
 * version/metadataVersion/listeners/config}, {@code spec.entityOperator.topicOperator}; the pool's
 * {@code strimzi.io/cluster} label, {@code roles}, {@code storage.type: jbod} with {@code persistent-claim} volumes
 * and {@code kraftMetadata: shared}), {@code api/.../kafka/PersistentClaimStorage.java} ({@code size},
 * {@code class}, {@code deleteClaim}, {@code id}) and {@code packaging/examples/topic/kafka-topic.yaml}
 * ({@code partitions}, {@code replicas}, {@code config}; {@code topicName} lets the resource name differ from the
 * topic's, so two pools in one namespace do not collide). The plain listener's bootstrap Service is
 * {@code <cluster>-kafka-bootstrap}.
 */
public final class KafkaModel extends ComponentModel {
    public static final String COMPONENT = "kafka";
    public static final String API_VERSION = "kafka.strimzi.io/v1";
    public static final String CLUSTER_LABEL = "strimzi.io/cluster";
    public static final int PLAIN_PORT = 9092;
    /** KVPool's streams (dev.kvpool.api.events.Topics; KafkaModelTest checks the names against it). */
    public static final String TOPIC_CONFIG = "kvpool.config";
    public static final String TOPIC_CACHE = "kvpool.cache";
    public static final String TOPIC_BLOCKS = "kvpool.blocks";
    static final long DAY_MS = 24L * 3600 * 1000;

    /**
     * Partitions and retention of each stream. kvpool.config has one partition: the control plane relays its outbox
     * in position order and the metadata plane follows that position, so one total order is what they need; the
     * volume is small and 7 days cover any plane that was down (it resyncs from the snapshot beyond). kvpool.cache
     * and kvpool.blocks are keyed by instance id (one instance's events stay ordered in its partition): 12
     * partitions spread the load of many instances, and a day covers trace replay and catching up after an outage.
     */
    public record TopicSpec(String name, int partitions, long retentionMs) {
    }

    public static final List<TopicSpec> TOPICS = List.of(
            new TopicSpec(TOPIC_CONFIG, 1, 7 * DAY_MS),
            new TopicSpec(TOPIC_CACHE, 12, DAY_MS),
            new TopicSpec(TOPIC_BLOCKS, 12, DAY_MS));

    private final KVPoolSpec.ManagedKafka managed;

    private KafkaModel(KVPool pool) {
        super(pool, COMPONENT);
        KVPoolSpec.Engines e = pool.getSpec().engines;
        this.managed = e == null || e.kafka == null || e.kafka.managed == null
                ? new KVPoolSpec.ManagedKafka() : e.kafka.managed;
    }

    public static KafkaModel of(KVPool pool) {
        return new KafkaModel(pool);
    }

    /** The plain listener's bootstrap Service, as every client in the namespace reaches it. */
    public String bootstrap() {
        return name() + "-kafka-bootstrap:" + PLAIN_PORT;
    }

    /**
     * {@code <pool>}: Strimzi names the pods {@code <cluster>-<node pool>-<id>}, here {@code <pool>-kafka-<pool>-<id>},
     * and a pod name is its DNS label (63 characters at most); any longer node pool name would shorten the KVPool
     * names that fit. One node pool per KVPool, so the name is unique in the namespace.
     */
    public String nodePoolName() {
        return pool.getMetadata().getName();
    }

    /** Refuses a KVPool whose Kafka pod names ({@code <pool>-kafka-<pool>-<id>}, id up to 2 digits) exceed 63. */
    void checkNameLength() {
        int fixed = "-kafka".length() + "-".length() + "-00".length();
        int max = (63 - fixed) / 2;
        if (pool.getMetadata().getName().length() > max) {
            throw new IllegalArgumentException("a KVPool with managed Kafka has a name of at most " + max
                    + " characters: Strimzi names its pods <pool>-kafka-<pool>-<n>, at most 63 characters");
        }
    }

    public int replicas() {
        int r = managed.replicas == null ? 1 : managed.replicas;
        if (r < 1) {
            throw new IllegalArgumentException("spec.engines.kafka.managed.replicas must be at least 1");
        }
        return r;
    }

    /** Replicas of every partition: 3 when there are 3 nodes or more, else every node. */
    public int replicationFactor() {
        return Math.min(3, replicas());
    }

    /** Acks=all writes survive one node down from 3 replicas on; with fewer, one replica has to do. */
    public int minInSyncReplicas() {
        return Math.max(1, Math.min(2, replicationFactor() - 1));
    }

    public GenericKubernetesResource kafka() {
        checkNameLength();
        ObjectMeta meta = w.metadata();
        Map<String, Object> config = new LinkedHashMap<>();
        config.put("offsets.topic.replication.factor", replicationFactor());
        config.put("transaction.state.log.replication.factor", replicationFactor());
        config.put("transaction.state.log.min.isr", minInSyncReplicas());
        config.put("default.replication.factor", replicationFactor());
        config.put("min.insync.replicas", minInSyncReplicas());
        // topics come from the KafkaTopics below only: a typo in a client must not create a stray topic
        config.put("auto.create.topics.enable", false);
        Map<String, Object> kafka = Engines.map(
                "version", managed.version, // unset: the Strimzi operator's default Kafka version
                "metadataVersion", managed.metadataVersion,
                "image", managed.image,
                "listeners", List.of(Engines.map("name", "plain", "port", PLAIN_PORT, "type", "internal",
                        "tls", false)),
                "config", config);
        Map<String, Object> spec = Engines.map(
                "kafka", kafka,
                "entityOperator", Engines.map("topicOperator", Map.of()));
        return Engines.resource(API_VERSION, "Kafka", meta, spec);
    }

    public GenericKubernetesResource nodePool() {
        checkNameLength();
        ObjectMeta meta = new ObjectMetaBuilder(w.metadata())
                .withName(nodePoolName())
                .addToLabels(CLUSTER_LABEL, name())
                .build();
        Map<String, Object> volume = Engines.map(
                "id", 0,
                "type", "persistent-claim",
                "size", Engines.storage(managed, COMPONENT).toString(),
                "class", managed.storageClassName,
                "kraftMetadata", "shared",
                // the log outlives the Kafka resource: deleting a KVPool must not delete its events unasked
                "deleteClaim", false);
        Map<String, Object> spec = Engines.map(
                "replicas", replicas(),
                "roles", List.of("controller", "broker"),
                "storage", Engines.map("type", "jbod", "volumes", List.of(volume)),
                "resources", managed.resources,
                // Strimzi puts these on the broker pods: the pool's NetworkPolicy for Kafka selects them
                "template", Engines.map("pod", Engines.map("metadata", Engines.map("labels", w.selector()))));
        return Engines.resource(API_VERSION, "KafkaNodePool", meta, spec);
    }

    public List<GenericKubernetesResource> topics() {
        List<GenericKubernetesResource> out = new ArrayList<>();
        for (TopicSpec t : TOPICS) {
            ObjectMeta meta = new ObjectMetaBuilder(w.metadata())
                    .withName(topicResourceName(t.name()))
                    .addToLabels(CLUSTER_LABEL, name())
                    .build();
            Map<String, Object> spec = Engines.map(
                    "topicName", t.name(),
                    "partitions", t.partitions(),
                    "replicas", replicationFactor(),
                    "config", Engines.map("retention.ms", t.retentionMs(), "cleanup.policy", "delete"));
            out.add(Engines.resource(API_VERSION, "KafkaTopic", meta, spec));
        }
        return out;
    }

    /** {@code <pool>-kvpool-config}: a Kubernetes name per pool; the topic's own name is in spec.topicName. */
    public String topicResourceName(String topic) {
        return pool.getMetadata().getName() + "-" + topic.replace('.', '-');
    }
}
