package dev.kvpool.operator.reconciler;

import dev.kvpool.operator.crd.KVPool;
import dev.kvpool.operator.crd.PoolSecrets;
import io.fabric8.kubernetes.api.model.Secret;
import io.fabric8.kubernetes.api.model.SecretBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientException;
import java.nio.charset.StandardCharsets;
import java.security.SecureRandom;
import java.util.Base64;
import java.util.Map;

/**
 * The credentials a pool's services use, as Secrets the operator generates once and never rewrites.
 *
 * <p>They carry no owner reference on purpose: the control plane keeps its accounts in PostgreSQL, which may outlive
 * the KVPool resource (a referenced database). Deleting and re-creating the KVPool must find the same passwords, or
 * the new control plane's bootstrap admin would not match the one stored. Removing a pool for good means deleting
 * these Secrets by hand (k8s/README.md says so).
 */
final class Credentials {
    static final String USERNAME = PoolSecrets.USERNAME_KEY;
    static final String PASSWORD = PoolSecrets.PASSWORD_KEY;
    private static final String CHARS = "ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789";
    private static final SecureRandom RANDOM = new SecureRandom();

    private final KubernetesClient client;

    Credentials(KubernetesClient client) {
        this.client = client;
    }

    /** The Secret's username and password, creating the Secret with a fresh password when it does not exist. */
    Map<String, String> ensure(KVPool pool, String name, String username) {
        String ns = pool.getMetadata().getNamespace();
        Secret s = client.secrets().inNamespace(ns).withName(name).get();
        if (s == null) {
            Secret created = new SecretBuilder()
                    .withNewMetadata().withName(name).withNamespace(ns)
                        .addToLabels("app.kubernetes.io/instance", pool.getMetadata().getName())
                        .addToLabels("app.kubernetes.io/part-of", "kvpool")
                        .addToLabels("app.kubernetes.io/created-by", "kvpool-operator")
                    .endMetadata()
                    .withType("kubernetes.io/basic-auth")
                    .withStringData(Map.of(USERNAME, username, PASSWORD, generate()))
                    .build();
            try {
                s = client.secrets().inNamespace(ns).resource(created).create();
            } catch (KubernetesClientException e) {
                if (e.getCode() != 409) {
                    throw e;
                }
                s = client.secrets().inNamespace(ns).withName(name).get(); // another reconcile won the race
            }
        }
        return Map.of(USERNAME, decode(s, USERNAME, username), PASSWORD, decode(s, PASSWORD, null));
    }

    /** Creates a Secret the model generated (e.g. the managed Valkey's password) unless one of that name exists. */
    void createIfAbsent(Secret s) {
        String ns = s.getMetadata().getNamespace();
        if (client.secrets().inNamespace(ns).withName(s.getMetadata().getName()).get() != null) {
            return;
        }
        try {
            client.secrets().inNamespace(ns).resource(s).create();
        } catch (KubernetesClientException e) {
            if (e.getCode() != 409) {
                throw e;
            }
        }
    }

    private static String decode(Secret s, String key, String fallback) {
        if (s.getData() != null && s.getData().get(key) != null) {
            return new String(Base64.getDecoder().decode(s.getData().get(key)), StandardCharsets.UTF_8);
        }
        if (s.getStringData() != null && s.getStringData().get(key) != null) {
            return s.getStringData().get(key); // the mock server keeps stringData as written
        }
        if (fallback != null) {
            return fallback;
        }
        throw new IllegalStateException("Secret " + s.getMetadata().getName() + " has no key '" + key + "'");
    }

    /** 28 random characters from three classes (the control plane's password rule: 12+, three classes). */
    static String generate() {
        StringBuilder b = new StringBuilder("Kv");
        for (int i = 0; i < 24; i++) {
            b.append(CHARS.charAt(RANDOM.nextInt(CHARS.length())));
        }
        return b.append("-7").toString();
    }
}
