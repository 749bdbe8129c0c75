package dev.kvpool.operator.reconciler;

import dev.kvpool.operator.controlplane.InvalidSpec;
import dev.kvpool.operator.controlplane.StorageMapping;
import dev.kvpool.operator.crd.ControlPlaneObjectStatus;
import dev.kvpool.operator.crd.KVPoolStorage;
import dev.kvpool.operator.crd.Names;
import io.javaoperatorsdk.operator.api.reconciler.ControllerConfiguration;
import io.quarkiverse.operatorsdk.annotations.RBACRule;

/** Keeps a storage of the pool's control plane equal to a {@link KVPoolStorage} (see the base class). */
@ControllerConfiguration(name = "kvpoolstorage")
@RBACRule(apiGroups = Names.GROUP, resources = "kvpools", verbs = {"get", "list", "watch"})
// the admin Secret of the pool (and, for tenants, the password Secret): read only
@RBACRule(apiGroups = "", resources = "secrets", verbs = {"get", "list", "watch"})
@RBACRule(apiGroups = "", resources = "events", verbs = {"create", "patch"})
public class KVPoolStorageReconciler extends ControlPlaneObjectReconciler<KVPoolStorage> {

    @Override
    protected String kind() {
        return "storage";
    }

    @Override
    protected String collection() {
        return StorageMapping.COLLECTION;
    }

    @Override
    protected String pool(KVPoolStorage r) {
        return r.getSpec().pool;
    }

    @Override
    protected String objectName(KVPoolStorage r) {
        return StorageMapping.name(r);
    }

    @Override
    protected ControlPlaneObjectStatus newStatus(KVPoolStorage r) {
        r.setStatus(new KVPoolStorage.Status());
        return r.getStatus();
    }

    @Override
    protected Desired desired(KVPoolStorage r) throws InvalidSpec {
        return Desired.of(StorageMapping.desired(r));
    }
}
