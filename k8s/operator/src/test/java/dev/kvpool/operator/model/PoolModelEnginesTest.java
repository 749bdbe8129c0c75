package dev.kvpool.operator.model;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.kvpool.operator.crd.KVPool;
import dev.kvpool.operator.crd.KVPoolSpec;
import io.fabric8.kubernetes.api.model.HasMetadata;
import java.util.HashSet;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Every object of a KVPool, with referenced, managed and mixed engines. */
class PoolModelEnginesTest {

    static final List<String> PLANES = List.of(
            "Deployment/prod-control-plane", "Service/prod-control-plane",
            "Deployment/prod-metadata-plane", "Service/prod-metadata-plane",
            "PodDisruptionBudget/prod-metadata-plane");

    /** The planes, then what other settings add (agents, policies, dashboard): see PoolModelTest. */
    static List<String> firstPlanes(List<String> all, int from) {
        return all.subList(from, from + PLANES.size());
    }

    @Test
    void referencedEnginesGiveNoEngineObjects() {
        assertEquals(PLANES, firstPlanes(EnginePools.kinds(PoolModel.of(EnginePools.referenced()).desired()), 0));
        assertTrue(PoolModel.of(EnginePools.referenced()).createOnce(() -> {
            throw new AssertionError("no password needed");
        }).isEmpty());
    }

    @Test
    void managedEnginesComeFirst() {
        List<String> all = EnginePools.kinds(PoolModel.of(EnginePools.managed()).desired());
        assertEquals(List.of(
                "Cluster/prod-postgres",
                "KafkaNodePool/prod", "Kafka/prod-kafka",
                "KafkaTopic/prod-kvpool-config", "KafkaTopic/prod-kvpool-cache", "KafkaTopic/prod-kvpool-blocks",
                "Service/prod-valkey-headless", "Service/prod-valkey", "StatefulSet/prod-valkey"),
                all.subList(0, 9));
        assertEquals(PLANES, firstPlanes(all, 9));
        assertEquals(all.size(), new HashSet<>(all).size(), "no two objects share kind and name");
        assertEquals(List.of("Secret/prod-valkey"),
                PoolModel.of(EnginePools.managed()).createOnce(() -> "p".repeat(40)).stream()
                        .map(s -> s.getKind() + "/" + s.getMetadata().getName()).toList());
    }

    @Test
    void mixedEnginesGiveOnlyTheManagedOnes() {
        KVPool p = EnginePools.referenced();
        p.getSpec().engines.kafka.bootstrap = null;
        p.getSpec().engines.kafka.secretRef = null;
        p.getSpec().engines.kafka.managed = new KVPoolSpec.ManagedKafka();
        List<String> kinds = EnginePools.kinds(PoolModel.of(p).desired());
        assertEquals(List.of("KafkaNodePool", "Kafka", "KafkaTopic", "KafkaTopic", "KafkaTopic"),
                kinds.subList(0, 5).stream().map(k -> k.substring(0, k.indexOf('/'))).toList());
        assertEquals(PLANES, firstPlanes(kinds, 5));
        assertTrue(PoolModel.of(p).createOnce(() -> "p".repeat(40)).isEmpty());

        KVPool q = EnginePools.referenced();
        q.getSpec().engines.redis.urlSecretRef = null;
        q.getSpec().engines.redis.managed = new KVPoolSpec.ManagedRedis();
        q.getSpec().engines.postgres.secretRef = null;
        q.getSpec().engines.postgres.managed = new KVPoolSpec.ManagedPostgres();
        assertEquals(List.of("Cluster/prod-postgres", "Service/prod-valkey-headless", "Service/prod-valkey",
                "StatefulSet/prod-valkey"), EnginePools.kinds(PoolModel.of(q).desired()).subList(0, 4));
    }

    @Test
    void everyObjectIsOwnedByThePoolInItsNamespace() {
        for (HasMetadata o : PoolModel.of(EnginePools.managed()).desired()) {
            ManagedEnginesTest.assertOwnedByThePool(o);
        }
    }

    @Test
    void isDeterministic() {
        assertEquals(PoolModel.of(EnginePools.managed()).desired(), PoolModel.of(EnginePools.managed()).desired());
        assertEquals(PoolModel.of(EnginePools.referenced()).desired(),
                PoolModel.of(EnginePools.referenced()).desired());
    }
}
