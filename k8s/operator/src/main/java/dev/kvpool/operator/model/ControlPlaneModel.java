package dev.kvpool.operator.model;

import dev.kvpool.operator.crd.KVPool;
import dev.kvpool.operator.crd.PoolSecrets;
import dev.kvpool.operator.crd.KVPoolSpec;
import io.fabric8.kubernetes.api.model.ContainerBuilder;
import io.fabric8.kubernetes.api.model.EnvVar;
import io.fabric8.kubernetes.api.model.Service;
import io.fabric8.kubernetes.api.model.apps.Deployment;
import io.fabric8.kubernetes.api.model.apps.DeploymentBuilder;
import java.util.ArrayList;
import java.util.List;

/**
 * The desired control plane of a {@link KVPool}: a Deployment and a Service, as plain fabric8 objects. Pure: no
 * Kubernetes client, no I/O; the same KVPool always gives equal objects, so a reconciler can apply them as they are.
 *
 * <p>The database kind is fixed when the control plane's jar is built (it is a {@code mutable-jar} built for H2;
 * {@code QUARKUS_DATASOURCE_DB_KIND} alone does not switch it, and {@code quarkus.launch.rebuild} at start would
 * write into the application under a read-only root). The image this model runs must therefore be built with
 * {@code -Dquarkus.datasource.db-kind=postgresql}; the model still sets {@code QUARKUS_DATASOURCE_DB_KIND=postgresql}
 * as a statement of intent (harmless: it equals the build-time value). The root filesystem is read-only, so the pod
 * gets writable {@code emptyDir}s for {@code /tmp} and for {@code kvpool.data-dir} ({@code KVPOOL_DATA_DIR}). The
 * database and Kafka come from {@link EngineEndpoints}: a referenced Secret or CloudNativePG's, Kafka's bootstrap and
 * client properties.
 */
public final class ControlPlaneModel extends ComponentModel {
    public static final String COMPONENT = "control-plane";
    public static final String DEFAULT_IMAGE_REPOSITORY = Workloads.DEFAULT_IMAGE_REPOSITORY;
    public static final int HTTP_PORT = 6492;
    public static final int GRPC_PORT = 6491;
    public static final long RUN_AS_USER = Workloads.RUN_AS_USER;
    /** Keys of the database Secret named by spec.engines.postgres.secretRef. */
    public static final String DB_URL_KEY = EngineEndpoints.DB_URL_KEY;
    public static final String DB_USERNAME_KEY = EngineEndpoints.DB_USERNAME_KEY;
    public static final String DB_PASSWORD_KEY = EngineEndpoints.DB_PASSWORD_KEY;

    private ControlPlaneModel(KVPool pool) {
        super(pool, COMPONENT);
    }

    public static ControlPlaneModel of(KVPool pool) {
        return new ControlPlaneModel(pool);
    }

    public Deployment deployment() {
        KVPoolSpec.ControlPlane cp = pool.getSpec().controlPlane == null
                ? new KVPoolSpec.ControlPlane() : pool.getSpec().controlPlane;
        return new DeploymentBuilder()
                .withMetadata(w.metadata())
                .withNewSpec()
                    .withReplicas(cp.replicas == null ? 1 : cp.replicas)
                    .withNewSelector().withMatchLabels(selector()).endSelector()
                    .withNewTemplate()
                        .withNewMetadata().withLabels(labels()).endMetadata()
                        .withNewSpec()
                            .withSecurityContext(Workloads.podSecurityContext())
                            .withContainers(new ContainerBuilder()
                                    .withName(COMPONENT)
                                    .withImage(image())
                                    .withPorts(httpGrpcPorts(HTTP_PORT, GRPC_PORT))
                                    .withEnv(env())
                                    .withResources(cp.resources)
                                    .withReadinessProbe(Workloads.httpProbe("/q/health/ready", 5, 3))
                                    .withLivenessProbe(Workloads.httpProbe("/q/health/live", 30, 3))
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

    /** The data dir, then the database and Kafka settings of {@link EngineEndpoints} (referenced or managed). */
    List<EnvVar> env() {
        List<EnvVar> env = new ArrayList<>();
        env.add(Workloads.dataDirEnv());
        // the bootstrap admin: the operator generates the Secret once and logs in with it (storages, groups, tenants)
        env.add(Workloads.fromSecret(PoolSecrets.ADMIN_PASSWORD_ENV,
                PoolSecrets.adminSecretName(pool.getMetadata().getName()), PoolSecrets.PASSWORD_KEY));
        env.addAll(EngineEndpoints.of(pool).controlPlaneEnv());
        return env;
    }

}
