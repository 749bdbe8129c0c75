package dev.kvpool.operator.model;

import dev.kvpool.operator.crd.KVPool;
import dev.kvpool.operator.crd.KVPoolSpec;
import dev.kvpool.operator.crd.SecretKeyRef;
import dev.kvpool.operator.crd.SecretRef;
import io.fabric8.kubernetes.api.model.EnvVar;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.api.model.ObjectMetaBuilder;
import io.fabric8.kubernetes.api.model.apps.Deployment;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;

/** KVPools with referenced, managed and mixed engines, for the engine tests. */
final class EnginePools {
    private EnginePools() {
    }

    static KVPool bare() {
        KVPool p = new KVPool();
        p.setMetadata(new ObjectMetaBuilder().withName("prod").withNamespace("llm").withUid("uid-1").build());
        KVPoolSpec spec = new KVPoolSpec();
        spec.version = "0.4.2";
        spec.engines = new KVPoolSpec.Engines();
        spec.engines.postgres = new KVPoolSpec.Postgres();
        spec.engines.kafka = new KVPoolSpec.Kafka();
        spec.engines.redis = new KVPoolSpec.Redis();
        p.setSpec(spec);
        return p;
    }

    /** Every engine an existing one: Secrets, a bootstrap with a client-properties Secret. */
    static KVPool referenced() {
        KVPool p = bare();
        p.getSpec().engines.postgres.secretRef = new SecretRef("prod-db");
        p.getSpec().engines.kafka.bootstrap = "kafka-0.kafka:9093,kafka-1.kafka:9093";
        p.getSpec().engines.kafka.secretRef = new SecretRef("prod-kafka-client");
        p.getSpec().engines.redis.urlSecretRef = new SecretKeyRef("prod-redis", "redis-url");
        return p;
    }

    /** Every engine run by the operator, with defaults. */
    static KVPool managed() {
        KVPool p = bare();
        p.getSpec().engines.postgres.managed = new KVPoolSpec.ManagedPostgres();
        p.getSpec().engines.kafka.managed = new KVPoolSpec.ManagedKafka();
        p.getSpec().engines.redis.managed = new KVPoolSpec.ManagedRedis();
        return p;
    }

    static Map<String, EnvVar> env(Deployment d) {
        return d.getSpec().getTemplate().getSpec().getContainers().getFirst().getEnv().stream()
                .collect(Collectors.toMap(EnvVar::getName, e -> e));
    }

    static Map<String, EnvVar> byName(List<EnvVar> env) {
        return env.stream().collect(Collectors.toMap(EnvVar::getName, e -> e));
    }

    static List<String> kinds(List<HasMetadata> objects) {
        return objects.stream().map(o -> o.getKind() + "/" + o.getMetadata().getName()).toList();
    }
}
