package dev.kvpool.operator.reconciler;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.kvpool.operator.crd.KVPool;
import dev.kvpool.operator.crd.PoolSecrets;
import io.fabric8.kubernetes.api.model.ObjectMetaBuilder;
import org.junit.jupiter.api.Test;

/** The Secret the KVPool reconciler writes is the one the storage/group/tenant reconcilers read. */
class PoolSecretsTest {
    @Test
    void bothSidesNameTheSameAdminSecretAndKeys() {
        KVPool pool = new KVPool();
        pool.setMetadata(new ObjectMetaBuilder().withName("demo").withNamespace("ns").build());
        assertEquals(KVPoolReconciler.adminSecretName(pool), PoolSecrets.adminSecretName("demo"));
        assertEquals(KVPoolReconciler.ADMIN_USER, PoolSecrets.DEFAULT_ADMIN_USERNAME);
        assertEquals(Credentials.USERNAME, PoolSecrets.USERNAME_KEY);
        assertEquals(Credentials.PASSWORD, PoolSecrets.PASSWORD_KEY);
    }
}
