package dev.kvpool.operator.model;

import dev.kvpool.operator.crd.KVPool;
import dev.kvpool.operator.crd.KVPoolSpec;
import io.fabric8.kubernetes.api.model.ContainerBuilder;
import io.fabric8.kubernetes.api.model.IntOrString;
import io.fabric8.kubernetes.api.model.ObjectMeta;
import io.fabric8.kubernetes.api.model.ObjectMetaBuilder;
import io.fabric8.kubernetes.api.model.PersistentVolumeClaimBuilder;
import io.fabric8.kubernetes.api.model.Probe;
import io.fabric8.kubernetes.api.model.ProbeBuilder;
import io.fabric8.kubernetes.api.model.Secret;
import io.fabric8.kubernetes.api.model.SecretBuilder;
import io.fabric8.kubernetes.api.model.Service;
import io.fabric8.kubernetes.api.model.ServiceBuilder;
import io.fabric8.kubernetes.api.model.VolumeMountBuilder;
import io.fabric8.kubernetes.api.model.apps.StatefulSet;
import io.fabric8.kubernetes.api.model.apps.StatefulSetBuilder;
import java.security.SecureRandom;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;

/**
 * The managed Redis of a {@link KVPool}: one Valkey node as a StatefulSet {@code <pool>-valkey} with a
 * PersistentVolumeClaim, a headless Service for its stable identity, a ClusterIP Service {@code <pool>-valkey} for
 * the clients, and a Secret {@code <pool>-valkey} (keys {@code password}, {@code url}). Pure: the password is an
 * input of {@link #secret(String)}; the reconciler creates that Secret only while it is absent (with
 * {@link #newPassword()}), so a reconcile never changes a running Valkey's password.
 *
 * <p>Persistence: append-only file with {@code appendfsync everysec} (a crash loses at most about one second of
 * writes) besides the default RDB snapshots. RDB alone would lose every write since the last snapshot (minutes) and
 * AOF {@code always} would fsync every index write; the metadata plane recovers a lost second (its replicas
 * re-register what they serve) but not a lost index. {@code maxmemory-policy noeviction}: an index that silently
 * dropped keys would lose blocks; a full Valkey refuses writes, which the metadata plane reports.
 */
public final class ValkeyModel extends ComponentModel {
    public static final String COMPONENT = "valkey";
    public static final String DEFAULT_IMAGE = "docker.io/valkey/valkey:8.1";
    public static final int PORT = 6379;
    public static final String PASSWORD_KEY = "password";
    public static final String URL_KEY = "url";
    public static final String PASSWORD_ENV = "VALKEY_PASSWORD";
    /** The official image's valkey user. */
    public static final long RUN_AS_USER = 999;
    public static final String DATA_VOLUME = "data";
    public static final String DATA_PATH = "/data";
    /** 180 × 10 s: loading a large append-only file takes minutes, and PING answers LOADING meanwhile. */
    public static final int STARTUP_FAILURE_THRESHOLD = 180;
    /** URL-safe and shell-safe, long enough not to be guessed: what {@link #newPassword()} makes, at least. */
    static final Pattern PASSWORD = Pattern.compile("^[A-Za-z0-9_-]{32,256}$");

    private final KVPoolSpec.ManagedRedis managed;

    private ValkeyModel(KVPool pool) {
        super(pool, COMPONENT);
        // Service names are DNS labels: <pool>-valkey-headless must fit in 63 characters
        if (headlessServiceName().length() > 63) {
            throw new IllegalArgumentException("a KVPool with managed Redis has a name of at most "
                    + (63 - "-valkey-headless".length()) + " characters (Service <pool>-valkey-headless)");
        }
        KVPoolSpec.Engines e = pool.getSpec().engines;
        this.managed = e == null || e.redis == null || e.redis.managed == null
                ? new KVPoolSpec.ManagedRedis() : e.redis.managed;
    }

    public static ValkeyModel of(KVPool pool) {
        return new ValkeyModel(pool);
    }

    /** 32 random bytes, base64url (43 characters). Not pure: only for a Secret that does not exist yet. */
    public static String newPassword() {
        byte[] b = new byte[32];
        new SecureRandom().nextBytes(b);
        return Base64.getUrlEncoder().withoutPadding().encodeToString(b);
    }

    @Override
    public String image() {
        return managed.image == null || managed.image.isBlank() ? DEFAULT_IMAGE : managed.image;
    }

    public String secretName() {
        return name();
    }

    public String headlessServiceName() {
        return name() + "-headless";
    }

    /** The Secret the pod and the metadata plane read; url points at the client Service. */
    public Secret secret(String password) {
        if (password == null || !PASSWORD.matcher(password).matches()) {
            throw new IllegalArgumentException("a Valkey password is 32-256 characters of A-Z a-z 0-9 _ -");
        }
        Map<String, String> data = new LinkedHashMap<>();
        data.put(PASSWORD_KEY, password);
        data.put(URL_KEY, "redis://:" + password + "@" + name() + ":" + PORT);
        return new SecretBuilder()
                .withMetadata(w.metadata())
                .withType("Opaque")
                .withStringData(data)
                .build();
    }

    public Service service() {
        return new ServiceBuilder()
                .withMetadata(w.metadata())
                .withNewSpec()
                    .withType("ClusterIP")
                    .withSelector(selector())
                    .addNewPort().withName("redis").withPort(PORT).withTargetPort(new IntOrString("redis")).withProtocol("TCP").endPort()
                .endSpec()
                .build();
    }

    /** The StatefulSet's governing Service: a stable DNS name per pod, also before it is ready. */
    public Service headlessService() {
        ObjectMeta meta = new ObjectMetaBuilder(w.metadata()).withName(headlessServiceName()).build();
        return new ServiceBuilder()
                .withMetadata(meta)
                .withNewSpec()
                    .withClusterIP("None")
                    .withPublishNotReadyAddresses(true)
                    .withSelector(selector())
                    .addNewPort().withName("redis").withPort(PORT).withTargetPort(new IntOrString("redis")).withProtocol("TCP").endPort()
                .endSpec()
                .build();
    }

    public StatefulSet statefulSet() {
        return new StatefulSetBuilder()
                .withMetadata(w.metadata())
                .withNewSpec()
                    .withReplicas(1) // one node: no replication, no failover (k8s/engines.md)
                    .withServiceName(headlessServiceName())
                    .withNewSelector().withMatchLabels(selector()).endSelector()
                    .withNewTemplate()
                        .withNewMetadata().withLabels(labels()).endMetadata()
                        .withNewSpec()
                            .withNewSecurityContext()
                                .withRunAsNonRoot(true)
                                .withRunAsUser(RUN_AS_USER)
                                .withRunAsGroup(RUN_AS_USER)
                                .withFsGroup(RUN_AS_USER) // the claim is writable by the valkey user
                                .withNewSeccompProfile().withType("RuntimeDefault").endSeccompProfile()
                            .endSecurityContext()
                            .withContainers(new ContainerBuilder()
                                    .withName(COMPONENT)
                                    .withImage(image())
                                    // the server itself: the image's entrypoint would try to chown as root
                                    .withCommand("valkey-server")
                                    .withArgs(args())
                                    .addNewPort().withName("redis").withContainerPort(PORT).withProtocol("TCP").endPort()
                                    .withEnv(Workloads.fromSecret(PASSWORD_ENV, secretName(), PASSWORD_KEY),
                                            // valkey-cli (the probes) authenticates from this variable
                                            Workloads.fromSecret("REDISCLI_AUTH", secretName(), PASSWORD_KEY))
                                    .withResources(managed.resources)
                                    .withStartupProbe(ping(STARTUP_FAILURE_THRESHOLD))
                                    .withReadinessProbe(ping(3))
                                    .withLivenessProbe(ping(6))
                                    .withSecurityContext(Workloads.containerSecurityContext())
                                    .withVolumeMounts(new VolumeMountBuilder().withName(DATA_VOLUME)
                                            .withMountPath(DATA_PATH).build())
                                    .build())
                        .endSpec()
                    .endTemplate()
                    .withVolumeClaimTemplates(new PersistentVolumeClaimBuilder()
                            .withNewMetadata().withName(DATA_VOLUME).withLabels(labels()).endMetadata()
                            .withNewSpec()
                                .withAccessModes("ReadWriteOnce")
                                .withStorageClassName(managed.storageClassName)
                                .withNewResources()
                                    .addToRequests("storage", Engines.storage(managed, "redis"))
                                .endResources()
                            .endSpec()
                            .build())
                .endSpec()
                .build();
    }

    /**
     * {@code --requirepass} from the env (Kubernetes expands {@code $(VALKEY_PASSWORD)}; the pod spec holds only the
     * reference), data in {@code /data}, AOF every second (see the class comment).
     */
    List<String> args() {
        return List.of(
                "--port", Integer.toString(PORT),
                "--dir", DATA_PATH,
                "--appendonly", "yes",
                "--appendfsync", "everysec",
                "--maxmemory-policy", "noeviction",
                "--requirepass", "$(" + PASSWORD_ENV + ")");
    }

    /** PING must answer PONG (valkey-cli exits 0 on an error reply such as LOADING or NOAUTH, hence the grep). */
    static Probe ping(int failureThreshold) {
        return new ProbeBuilder()
                .withNewExec().withCommand("sh", "-c", "valkey-cli -h 127.0.0.1 -p " + PORT + " ping | grep -q PONG")
                .endExec()
                .withPeriodSeconds(10)
                .withTimeoutSeconds(5)
                .withFailureThreshold(failureThreshold)
                .build();
    }
}
