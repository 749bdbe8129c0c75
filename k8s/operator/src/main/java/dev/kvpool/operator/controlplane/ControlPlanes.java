package dev.kvpool.operator.controlplane;

import dev.kvpool.operator.crd.KVPool;
import dev.kvpool.operator.crd.PoolSecrets;
import dev.kvpool.operator.model.ControlPlaneModel;
import io.fabric8.kubernetes.api.model.Secret;
import io.fabric8.kubernetes.client.KubernetesClient;
import jakarta.enterprise.context.ApplicationScoped;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.util.Base64;
import java.util.HexFormat;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import org.eclipse.microprofile.config.inject.ConfigProperty;

/**
 * Finds the control plane of a pool and its admin credentials, and keeps one {@link ControlPlaneApi} (with its token)
 * per pool. The URL is {@code http://<pool>-control-plane.<namespace>.svc:6492} unless
 * {@code kvpool.operator.control-plane-url} overrides it (a template with {@code {pool}} and {@code {namespace}}, for
 * tests and for an operator running outside the cluster).
 */
@ApplicationScoped
public class ControlPlanes {
    /** Pools one operator talks to are few; the bound only keeps a leak from growing (rotated passwords, gone pools). */
    static final int MAX_CLIENTS = 256;

    private final KubernetesClient client;
    private final Optional<String> urlTemplate;
    private final Duration timeout;
    private final Map<String, ControlPlaneApi> clients = new ConcurrentHashMap<>();

    public ControlPlanes(KubernetesClient client,
                         @ConfigProperty(name = "kvpool.operator.control-plane-url") Optional<String> urlTemplate,
                         @ConfigProperty(name = "kvpool.operator.request-timeout", defaultValue = "10s")
                         Duration timeout) {
        this.client = client;
        this.urlTemplate = urlTemplate.filter(s -> !s.isBlank());
        this.timeout = timeout;
    }

    /** The missing or incomplete admin Secret, named. */
    public static final class MissingCredentials extends Exception {
        public MissingCredentials(String message) {
            super(message);
        }
    }

    public String url(KVPool pool) {
        String ns = pool.getMetadata().getNamespace();
        String name = pool.getMetadata().getName();
        return urlTemplate.map(t -> t.replace("{pool}", name).replace("{namespace}", ns))
                .orElseGet(() -> "http://" + ControlPlaneModel.of(pool).name() + "." + ns + ".svc:"
                        + ControlPlaneModel.HTTP_PORT);
    }

    public ControlPlaneApi forPool(KVPool pool) throws MissingCredentials {
        String ns = pool.getMetadata().getNamespace();
        String secretName = PoolSecrets.adminSecretName(pool.getMetadata().getName());
        Secret s = client.secrets().inNamespace(ns).withName(secretName).get();
        if (s == null) {
            throw new MissingCredentials("Secret " + ns + "/" + secretName + " with the control plane's admin "
                    + "credentials does not exist (yet)");
        }
        String password = value(s, PoolSecrets.PASSWORD_KEY);
        if (password == null || password.isEmpty()) {
            throw new MissingCredentials("Secret " + ns + "/" + secretName + " has no key '" + PoolSecrets.PASSWORD_KEY
                    + "'");
        }
        String user = value(s, PoolSecrets.USERNAME_KEY);
        String u = user == null || user.isBlank() ? PoolSecrets.DEFAULT_ADMIN_USERNAME : user.trim();
        String url = url(pool);
        // a rotated password gives a new key (and client), so the old token is not kept alive by a stale entry
        String key = url + "\n" + u + "\n" + sha256(password);
        if (clients.size() > MAX_CLIENTS && !clients.containsKey(key)) {
            clients.clear();
        }
        return clients.computeIfAbsent(key, k -> new ControlPlaneApi(url, u, password, timeout));
    }

    /** A key of a Secret, decoded; null when absent. */
    public static String value(Secret s, String key) {
        if (s.getData() != null && s.getData().get(key) != null) {
            try {
                return new String(Base64.getDecoder().decode(s.getData().get(key)), StandardCharsets.UTF_8);
            } catch (IllegalArgumentException e) {
                return null;
            }
        }
        return s.getStringData() == null ? null : s.getStringData().get(key);
    }

    private static String sha256(String s) {
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256")
                    .digest(s.getBytes(StandardCharsets.UTF_8)));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }
}
