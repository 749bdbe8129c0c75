package dev.kvpool.operator.model;

import dev.kvpool.operator.crd.KVPool;
import dev.kvpool.operator.crd.KVPoolSpec;
import io.fabric8.kubernetes.api.model.ContainerBuilder;
import io.fabric8.kubernetes.api.model.EnvVar;
import io.fabric8.kubernetes.api.model.EnvVarBuilder;
import io.fabric8.kubernetes.api.model.IntOrString;
import io.fabric8.kubernetes.api.model.OwnerReference;
import io.fabric8.kubernetes.api.model.OwnerReferenceBuilder;
import io.fabric8.kubernetes.api.model.Probe;
import io.fabric8.kubernetes.api.model.ProbeBuilder;
import io.fabric8.kubernetes.api.model.Service;
import io.fabric8.kubernetes.api.model.ServiceBuilder;
import io.fabric8.kubernetes.api.model.apps.Deployment;
import io.fabric8.kubernetes.api.model.apps.DeploymentBuilder;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The desired control plane of a {@link KVPool}: a Deployment and a Service, as plain fabric8 objects. Pure: no
 * Kubernetes client, no I/O; the same KVPool always gives equal objects, so a reconciler can apply them as they are.
 */
public final class ControlPlaneModel {
    public static final String COMPONENT = "control-plane";
    public static final String DEFAULT_IMAGE_REPOSITORY = "ghcr.io/kvpool";
    public static final int HTTP_PORT = 6492;
    public static final int GRPC_PORT = 6491;
    public static final long RUN_AS_USER = 185; // the UBI OpenJDK image's non-root user
    /** Keys of the database Secret named by spec.engines.postgres.secretRef. */
    public static final String DB_URL_KEY = "url";
    public static final String DB_USERNAME_KEY = "username";
    public static final String DB_PASSWORD_KEY = "password";

    private final KVPool pool;

    private ControlPlaneModel(KVPool pool) {
        this.pool = pool;
    }

    public static ControlPlaneModel of(KVPool pool) {
        if (pool.getMetadata() == null || pool.getMetadata().getName() == null) {
            throw new IllegalArgumentException("KVPool without metadata.name");
        }
        if (pool.getSpec() == null || pool.getSpec().version == null) {
            throw new IllegalArgumentException("KVPool " + pool.getMetadata().getName() + " without spec.version");
        }
        return new ControlPlaneModel(pool);
    }

    /** {@code <pool>-control-plane}: the name of the Deployment and of the Service. */
    public String name() {
        return pool.getMetadata().getName() + "-" + COMPONENT;
    }

    public String image() {
        KVPoolSpec spec = pool.getSpec();
        String repo = spec.image == null || spec.image.isBlank() ? DEFAULT_IMAGE_REPOSITORY : spec.image;
        return repo + "/kvpool-control-plane:" + spec.version;
    }

    /** The labels of every object and the pod template; the first three also select the pods. */
    public Map<String, String> labels() {
        Map<String, String> l = new LinkedHashMap<>(selector());
        l.put("app.kubernetes.io/version", pool.getSpec().version);
        l.put("app.kubernetes.io/managed-by", "kvpool-operator");
        l.put("app.kubernetes.io/part-of", "kvpool");
        return l;
    }

    public Map<String, String> selector() {
        Map<String, String> l = new LinkedHashMap<>();
        l.put("app.kubernetes.io/name", "kvpool-" + COMPONENT);
        l.put("app.kubernetes.io/instance", pool.getMetadata().getName());
        l.put("app.kubernetes.io/component", COMPONENT);
        return l;
    }

    public OwnerReference ownerReference() {
        return new OwnerReferenceBuilder()
                .withApiVersion(pool.getApiVersion())
                .withKind(pool.getKind())
                .withName(pool.getMetadata().getName())
                .withUid(pool.getMetadata().getUid())
                .withController(true)
                .withBlockOwnerDeletion(true)
                .build();
    }

    public Deployment deployment() {
        KVPoolSpec.ControlPlane cp = pool.getSpec().controlPlane == null
                ? new KVPoolSpec.ControlPlane() : pool.getSpec().controlPlane;
        return new DeploymentBuilder()
                .withNewMetadata()
                    .withName(name())
                    .withNamespace(pool.getMetadata().getNamespace())
                    .withLabels(labels())
                    .withOwnerReferences(ownerReference())
                .endMetadata()
                .withNewSpec()
                    .withReplicas(cp.replicas == null ? 1 : cp.replicas)
                    .withNewSelector().withMatchLabels(selector()).endSelector()
                    .withNewTemplate()
                        .withNewMetadata().withLabels(labels()).endMetadata()
                        .withNewSpec()
                            .withNewSecurityContext()
                                .withRunAsNonRoot(true)
                                .withRunAsUser(RUN_AS_USER)
                                .withNewSeccompProfile().withType("RuntimeDefault").endSeccompProfile()
                            .endSecurityContext()
                            .withContainers(new ContainerBuilder()
                                    .withName(COMPONENT)
                                    .withImage(image())
                                    .addNewPort().withName("http").withContainerPort(HTTP_PORT).withProtocol("TCP").endPort()
                                    .addNewPort().withName("grpc").withContainerPort(GRPC_PORT).withProtocol("TCP").endPort()
                                    .withEnv(env())
                                    .withResources(cp.resources)
                                    .withReadinessProbe(probe("/q/health/ready", 5))
                                    .withLivenessProbe(probe("/q/health/live", 30))
                                    .withNewSecurityContext()
                                        .withRunAsNonRoot(true)
                                        .withAllowPrivilegeEscalation(false)
                                        .withReadOnlyRootFilesystem(true)
                                        .withNewCapabilities().withDrop("ALL").endCapabilities()
                                    .endSecurityContext()
                                    .build())
                        .endSpec()
                    .endTemplate()
                .endSpec()
                .build();
    }

    public Service service() {
        return new ServiceBuilder()
                .withNewMetadata()
                    .withName(name())
                    .withNamespace(pool.getMetadata().getNamespace())
                    .withLabels(labels())
                    .withOwnerReferences(ownerReference())
                .endMetadata()
                .withNewSpec()
                    .withType("ClusterIP")
                    .withSelector(selector())
                    .addNewPort().withName("http").withPort(HTTP_PORT).withTargetPort(new IntOrString("http")).withProtocol("TCP").endPort()
                    .addNewPort().withName("grpc").withPort(GRPC_PORT).withTargetPort(new IntOrString("grpc")).withProtocol("TCP").endPort()
                .endSpec()
                .build();
    }

    /** The database settings, from the Secret of spec.engines.postgres.secretRef (none while it is managed). */
    List<EnvVar> env() {
        KVPoolSpec.Engines engines = pool.getSpec().engines;
        if (engines == null || engines.postgres == null || engines.postgres.secretRef == null) {
            return List.of();
        }
        String secret = engines.postgres.secretRef.name;
        return List.of(
                new EnvVarBuilder().withName("QUARKUS_DATASOURCE_DB_KIND").withValue("postgresql").build(),
                fromSecret("QUARKUS_DATASOURCE_JDBC_URL", secret, DB_URL_KEY),
                fromSecret("QUARKUS_DATASOURCE_USERNAME", secret, DB_USERNAME_KEY),
                fromSecret("QUARKUS_DATASOURCE_PASSWORD", secret, DB_PASSWORD_KEY));
    }

    private static EnvVar fromSecret(String env, String secret, String key) {
        return new EnvVarBuilder().withName(env)
                .withNewValueFrom().withNewSecretKeyRef().withName(secret).withKey(key).endSecretKeyRef().endValueFrom()
                .build();
    }

    private static Probe probe(String path, int initialDelaySeconds) {
        return new ProbeBuilder()
                .withNewHttpGet().withPath(path).withPort(new IntOrString("http")).endHttpGet()
                .withInitialDelaySeconds(initialDelaySeconds)
                .withPeriodSeconds(10)
                .withFailureThreshold(3)
                .build();
    }
}
