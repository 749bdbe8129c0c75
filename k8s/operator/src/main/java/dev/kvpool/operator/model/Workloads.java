package dev.kvpool.operator.model;

import dev.kvpool.operator.crd.KVPool;
import dev.kvpool.operator.crd.KVPoolSpec;
import io.fabric8.kubernetes.api.model.EnvVar;
import io.fabric8.kubernetes.api.model.EnvVarBuilder;
import io.fabric8.kubernetes.api.model.IntOrString;
import io.fabric8.kubernetes.api.model.ObjectMeta;
import io.fabric8.kubernetes.api.model.ObjectMetaBuilder;
import io.fabric8.kubernetes.api.model.OwnerReference;
import io.fabric8.kubernetes.api.model.OwnerReferenceBuilder;
import io.fabric8.kubernetes.api.model.PodSecurityContext;
import io.fabric8.kubernetes.api.model.PodSecurityContextBuilder;
import io.fabric8.kubernetes.api.model.Probe;
import io.fabric8.kubernetes.api.model.ProbeBuilder;
import io.fabric8.kubernetes.api.model.SecurityContext;
import io.fabric8.kubernetes.api.model.SecurityContextBuilder;
import io.fabric8.kubernetes.api.model.Volume;
import io.fabric8.kubernetes.api.model.VolumeBuilder;
import io.fabric8.kubernetes.api.model.VolumeMount;
import io.fabric8.kubernetes.api.model.VolumeMountBuilder;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * What the KVPool components' pure models share: names, labels, owner reference, the non-root read-only pod, its
 * writable volumes and probes. Pure, like the models; one instance per KVPool and component.
 */
final class Workloads {
    static final String DEFAULT_IMAGE_REPOSITORY = "ghcr.io/kvpool";
    static final long RUN_AS_USER = 185; // the UBI OpenJDK image's non-root user
    /** Writable scratch for Vert.x, Netty and the JVM under the read-only root. */
    static final String TMP_VOLUME = "tmp";
    static final String TMP_PATH = "/tmp";
    /** Writable kvpool.data-dir (env KVPOOL_DATA_DIR) under the read-only root. */
    static final String DATA_VOLUME = "data";
    static final String DATA_PATH = "/var/lib/kvpool";
    static final String DATA_DIR_ENV = "KVPOOL_DATA_DIR";

    private final KVPool pool;
    private final String component;

    private Workloads(KVPool pool, String component) {
        this.pool = pool;
        this.component = component;
    }

    /** Refuses a KVPool without metadata.name or spec.version. */
    static Workloads of(KVPool pool, String component) {
        if (pool.getMetadata() == null || pool.getMetadata().getName() == null) {
            throw new IllegalArgumentException("KVPool without metadata.name");
        }
        if (pool.getSpec() == null || pool.getSpec().version == null) {
            throw new IllegalArgumentException("KVPool " + pool.getMetadata().getName() + " without spec.version");
        }
        return new Workloads(pool, component);
    }

    /** {@code <pool>-<component>}. */
    String name() {
        return pool.getMetadata().getName() + "-" + component;
    }

    /** {@code <spec.image or ghcr.io/kvpool>/kvpool-<component>:<spec.version>}. */
    String image() {
        KVPoolSpec spec = pool.getSpec();
        String repo = spec.image == null || spec.image.isBlank() ? DEFAULT_IMAGE_REPOSITORY : spec.image;
        return repo + "/kvpool-" + component + ":" + spec.version;
    }

    /** The labels of every object and the pod template; the selector's three also select the pods. */
    Map<String, String> labels() {
        Map<String, String> l = new LinkedHashMap<>(selector());
        l.put("app.kubernetes.io/version", pool.getSpec().version);
        l.put("app.kubernetes.io/managed-by", "kvpool-operator");
        l.put("app.kubernetes.io/part-of", "kvpool");
        return l;
    }

    /** Stable across upgrades (no version), so an upgrade never orphans pods. */
    Map<String, String> selector() {
        Map<String, String> l = new LinkedHashMap<>();
        l.put("app.kubernetes.io/name", "kvpool-" + component);
        l.put("app.kubernetes.io/instance", pool.getMetadata().getName());
        l.put("app.kubernetes.io/component", component);
        return l;
    }

    OwnerReference ownerReference() {
        return new OwnerReferenceBuilder()
                .withApiVersion(pool.getApiVersion())
                .withKind(pool.getKind())
                .withName(pool.getMetadata().getName())
                .withUid(pool.getMetadata().getUid())
                .withController(true)
                .withBlockOwnerDeletion(true)
                .build();
    }

    /** Name, namespace, labels and controller owner reference of each object of the component. */
    ObjectMeta metadata() {
        return new ObjectMetaBuilder()
                .withName(name())
                .withNamespace(pool.getMetadata().getNamespace())
                .withLabels(labels())
                .withOwnerReferences(ownerReference())
                .build();
    }

    static PodSecurityContext podSecurityContext() {
        return new PodSecurityContextBuilder()
                .withRunAsNonRoot(true)
                .withRunAsUser(RUN_AS_USER)
                .withNewSeccompProfile().withType("RuntimeDefault").endSeccompProfile()
                .build();
    }

    static SecurityContext containerSecurityContext() {
        return new SecurityContextBuilder()
                .withRunAsNonRoot(true)
                .withAllowPrivilegeEscalation(false)
                .withReadOnlyRootFilesystem(true)
                .withNewCapabilities().withDrop("ALL").endCapabilities()
                .build();
    }

    /** The writable emptyDirs the read-only root needs: /tmp and the data dir. */
    static List<Volume> volumes() {
        return List.of(
                new VolumeBuilder().withName(TMP_VOLUME).withNewEmptyDir().endEmptyDir().build(),
                new VolumeBuilder().withName(DATA_VOLUME).withNewEmptyDir().endEmptyDir().build());
    }

    static List<VolumeMount> volumeMounts() {
        return List.of(
                new VolumeMountBuilder().withName(TMP_VOLUME).withMountPath(TMP_PATH).build(),
                new VolumeMountBuilder().withName(DATA_VOLUME).withMountPath(DATA_PATH).build());
    }

    static EnvVar dataDirEnv() {
        return value(DATA_DIR_ENV, DATA_PATH);
    }

    static EnvVar value(String env, String value) {
        return new EnvVarBuilder().withName(env).withValue(value).build();
    }

    static EnvVar fromSecret(String env, String secret, String key) {
        return new EnvVarBuilder().withName(env)
                .withNewValueFrom().withNewSecretKeyRef().withName(secret).withKey(key).endSecretKeyRef().endValueFrom()
                .build();
    }

    /** An HTTP GET probe on the container port named http. */
    static Probe httpProbe(String path, int initialDelaySeconds, int failureThreshold) {
        return new ProbeBuilder()
                .withNewHttpGet().withPath(path).withPort(new IntOrString("http")).endHttpGet()
                .withInitialDelaySeconds(initialDelaySeconds)
                .withPeriodSeconds(10)
                .withFailureThreshold(failureThreshold)
                .build();
    }
}
