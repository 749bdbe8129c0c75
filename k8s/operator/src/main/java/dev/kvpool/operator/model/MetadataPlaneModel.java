package dev.kvpool.operator.model;

import dev.kvpool.operator.crd.KVPool;
import dev.kvpool.operator.crd.KVPoolSpec;
import io.fabric8.kubernetes.api.model.Affinity;
import io.fabric8.kubernetes.api.model.ContainerBuilder;
import io.fabric8.kubernetes.api.model.EnvVar;
import io.fabric8.kubernetes.api.model.IntOrString;
import io.fabric8.kubernetes.api.model.Service;
import io.fabric8.kubernetes.api.model.apps.Deployment;
import io.fabric8.kubernetes.api.model.apps.DeploymentBuilder;
import io.fabric8.kubernetes.api.model.policy.v1.PodDisruptionBudget;
import io.fabric8.kubernetes.api.model.policy.v1.PodDisruptionBudgetBuilder;
import java.util.ArrayList;
import java.util.List;

/**
 * The desired metadata plane of a {@link KVPool}: a Deployment, a Service and a PodDisruptionBudget, as plain fabric8
 * objects. Pure, like {@link ControlPlaneModel}.
 *
 * <p>Its replicas share one index in Redis ({@code KVPOOL_META_STORE=redis}, URL from
 * {@code spec.engines.redis.urlSecretRef} or the managed Valkey's Secret, see {@link EngineEndpoints}) and take their configuration from the control plane's Service. A
 * large index loads for minutes, so a startup probe on {@code /q/health/started} allows up to
 * {@link #STARTUP_FAILURE_THRESHOLD} × 10 s before liveness applies. The control plane account comes from the
 * Secret {@code <pool>-metadata-plane-account} (keys {@code username}, {@code password}), which nothing creates
 * yet: the pods wait for it.
 */
public final class MetadataPlaneModel extends ComponentModel {
    public static final String COMPONENT = "metadata-plane";
    public static final int HTTP_PORT = 6382;
    public static final int GRPC_PORT = 6381;
    /** 180 × 10 s: half an hour for a large index to load before the kubelet gives up. */
    public static final int STARTUP_FAILURE_THRESHOLD = 180;
    public static final String ACCOUNT_SECRET_SUFFIX = "-metadata-plane-account";
    public static final String ACCOUNT_USERNAME_KEY = "username";
    public static final String ACCOUNT_PASSWORD_KEY = "password";

    private MetadataPlaneModel(KVPool pool) {
        super(pool, COMPONENT);
    }

    public static MetadataPlaneModel of(KVPool pool) {
        return new MetadataPlaneModel(pool);
    }

    /** The Secret holding the control plane account the replicas log in with. */
    public String accountSecretName() {
        return pool.getMetadata().getName() + ACCOUNT_SECRET_SUFFIX;
    }

    public Deployment deployment() {
        KVPoolSpec.MetadataPlane mp = pool.getSpec().metadataPlane == null
                ? new KVPoolSpec.MetadataPlane() : pool.getSpec().metadataPlane;
        return new DeploymentBuilder()
                .withMetadata(w.metadata())
                .withNewSpec()
                    .withReplicas(mp.replicas == null ? 2 : mp.replicas)
                    .withNewSelector().withMatchLabels(selector()).endSelector()
                    .withNewTemplate()
                        .withNewMetadata().withLabels(labels()).endMetadata()
                        .withNewSpec()
                            .withSecurityContext(Workloads.podSecurityContext())
                            .withAffinity(preferOnePerNode())
                            .withContainers(new ContainerBuilder()
                                    .withName(COMPONENT)
                                    .withImage(image())
                                    .withPorts(httpGrpcPorts(HTTP_PORT, GRPC_PORT))
                                    .withEnv(env())
                                    .withResources(mp.resources)
                                    .withStartupProbe(Workloads.httpProbe("/q/health/started", 5, STARTUP_FAILURE_THRESHOLD))
                                    .withReadinessProbe(Workloads.httpProbe("/q/health/ready", 0, 3))
                                    .withLivenessProbe(Workloads.httpProbe("/q/health/live", 0, 3))
                                    .withSecurityContext(Workloads.containerSecurityContext())
                                    .withVolumeMounts(serviceVolumeMounts())
                                    .build())
                            .withVolumes(serviceVolumes())
                        .endSpec()
                    .endTemplate()
                .endSpec()
                .build();
    }

    public Service service() {
        return httpGrpcService(HTTP_PORT, GRPC_PORT);
    }

    /** At most one replica down at a time for voluntary disruptions (drains, upgrades of nodes). */
    public PodDisruptionBudget podDisruptionBudget() {
        return new PodDisruptionBudgetBuilder()
                .withMetadata(w.metadata())
                .withNewSpec()
                    .withMaxUnavailable(new IntOrString(1))
                    .withNewSelector().withMatchLabels(selector()).endSelector()
                .endSpec()
                .build();
    }

    /** Prefer one replica per node (preferred, not required: a one-node cluster still runs them all). */
    Affinity antiAffinity() {
        return preferOnePerNode();
    }

    /**
     * The metadata plane's settings (its application.properties): {@code KVPOOL_DATA_DIR}, {@code KVPOOL_META_STORE},
     * the Redis and Kafka settings of {@link EngineEndpoints} ({@code KVPOOL_REDIS_URL}, {@code KVPOOL_KAFKA_BOOTSTRAP},
     * {@code KVPOOL_KAFKA_CLIENT_CONFIG_DIR}), {@code KVPOOL_CONTROL_PLANE_URL / _USER / _PASSWORD}.
     */
    List<EnvVar> env() {
        List<EnvVar> env = new ArrayList<>();
        env.add(Workloads.dataDirEnv());
        env.add(Workloads.value("KVPOOL_META_STORE", "redis"));
        env.addAll(EngineEndpoints.of(pool).metadataPlaneEnv());
        env.add(Workloads.value("KVPOOL_CONTROL_PLANE_URL", "http://" + pool.getMetadata().getName() + "-"
                + ControlPlaneModel.COMPONENT + ":" + ControlPlaneModel.HTTP_PORT));
        env.add(Workloads.fromSecret("KVPOOL_CONTROL_PLANE_USER", accountSecretName(), ACCOUNT_USERNAME_KEY));
        env.add(Workloads.fromSecret("KVPOOL_CONTROL_PLANE_PASSWORD", accountSecretName(), ACCOUNT_PASSWORD_KEY));
        return env;
    }

}
