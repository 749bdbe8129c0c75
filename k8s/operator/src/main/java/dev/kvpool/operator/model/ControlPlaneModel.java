package dev.kvpool.operator.model;

import dev.kvpool.operator.crd.KVPool;
import dev.kvpool.operator.crd.PoolSecrets;
import dev.kvpool.operator.crd.KVPoolSpec;
import io.fabric8.kubernetes.api.model.ContainerBuilder;
import io.fabric8.kubernetes.api.model.EnvVar;
import io.fabric8.kubernetes.api.model.EnvVarBuilder;
import io.fabric8.kubernetes.api.model.IntOrString;
import io.fabric8.kubernetes.api.model.policy.v1.PodDisruptionBudget;
import io.fabric8.kubernetes.api.model.policy.v1.PodDisruptionBudgetBuilder;
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
 *
 * <p>Replicas: more than one elect a leader through PostgreSQL (a lease row) that runs the once-only work (outbox
 * relay, retention); every replica serves REST and the KVCM admin API, so readiness stays "serves requests" and a
 * follower is ready. More than one replica therefore needs PostgreSQL: on the embedded H2 each pod would keep its
 * own database ({@link #replicasProblem()}). With several, a PodDisruptionBudget keeps one up through drains and the
 * pods prefer distinct nodes; each pod advertises its own IP ({@value #ADVERTISED_HOST_ENV}, from the downward API)
 * for KVCM's GetManagerClusterInfo, and its node id stays generated.
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
    /** {@code kvpool.control.leader.advertised-host}: where other replicas and KVCM clients reach this pod. */
    public static final String ADVERTISED_HOST_ENV = "KVPOOL_CONTROL_LEADER_ADVERTISED_HOST";

    private ControlPlaneModel(KVPool pool) {
        super(pool, COMPONENT);
    }

    public static ControlPlaneModel of(KVPool pool) {
        return new ControlPlaneModel(pool);
    }

    private KVPoolSpec.ControlPlane spec() {
        return pool.getSpec().controlPlane == null ? new KVPoolSpec.ControlPlane() : pool.getSpec().controlPlane;
    }

    public int replicas() {
        Integer r = spec().replicas;
        return r == null ? 1 : r;
    }

    /**
     * Why this KVPool's control-plane replicas cannot run as asked, or null. The CRD bounds the count and requires
     * spec.engines.postgres, but a KVPool the API server never validated (a rendered manifest, an older CRD) reaches
     * the model too.
     */
    public String replicasProblem() {
        int n = replicas();
        if (n < 1 || n > KVPoolSpec.CONTROL_PLANE_MAX_REPLICAS) {
            return "spec.controlPlane.replicas is " + n + ": it must be 1.." + KVPoolSpec.CONTROL_PLANE_MAX_REPLICAS;
        }
        if (n > 1 && !EngineEndpoints.of(pool).postgres()) {
            return "spec.controlPlane.replicas is " + n + ": more than one control-plane replica needs PostgreSQL "
                    + "(spec.engines.postgres.secretRef or .managed); on the embedded H2 database each pod would keep "
                    + "its own copy of storages, groups and accounts";
        }
        return null;
    }

    public Deployment deployment() {
        String problem = replicasProblem();
        if (problem != null) {
            throw new IllegalArgumentException(problem);
        }
        KVPoolSpec.ControlPlane cp = spec();
        return new DeploymentBuilder()
                .withMetadata(w.metadata())
                .withNewSpec()
                    .withReplicas(replicas())
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
                                    .withResources(cp.resources)
                                    // ready = serves requests: a follower is ready too (only once-only work is the leader's)
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

    /** With several replicas, at least one stays up through voluntary disruptions (null with one: it would block drains). */
    public PodDisruptionBudget podDisruptionBudget() {
        if (replicas() <= 1) {
            return null;
        }
        return new PodDisruptionBudgetBuilder()
                .withMetadata(w.metadata())
                .withNewSpec()
                    .withMinAvailable(new IntOrString(1))
                    .withNewSelector().withMatchLabels(selector()).endSelector()
                .endSpec()
                .build();
    }

    /** The data dir, then the database and Kafka settings of {@link EngineEndpoints} (referenced or managed). */
    List<EnvVar> env() {
        List<EnvVar> env = new ArrayList<>();
        env.add(Workloads.dataDirEnv());
        // the bootstrap admin: the operator generates the Secret once and logs in with it (storages, groups, tenants)
        env.add(Workloads.fromSecret(PoolSecrets.ADMIN_PASSWORD_ENV,
                PoolSecrets.adminSecretName(pool.getMetadata().getName()), PoolSecrets.PASSWORD_KEY));
        env.addAll(EngineEndpoints.of(pool).controlPlaneEnv());
        // the address this pod answers on, for KVCM's GetManagerClusterInfo (the leader's endpoint); node id stays generated
        env.add(new EnvVarBuilder().withName(ADVERTISED_HOST_ENV)
                .withNewValueFrom().withNewFieldRef().withFieldPath("status.podIP").endFieldRef().endValueFrom().build());
        return env;
    }

}
