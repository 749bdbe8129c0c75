package dev.kvpool.operator.reconciler;

import com.fasterxml.jackson.databind.JsonNode;
import dev.kvpool.operator.controlplane.GroupMapping;
import dev.kvpool.operator.controlplane.InvalidSpec;
import dev.kvpool.operator.crd.ControlPlaneObjectStatus;
import dev.kvpool.operator.crd.KVPoolInstanceGroup;
import dev.kvpool.operator.crd.Names;
import io.javaoperatorsdk.operator.api.reconciler.ControllerConfiguration;
import io.quarkiverse.operatorsdk.annotations.RBACRule;

/**
 * Keeps an instance group of the pool's control plane equal to a {@link KVPoolInstanceGroup} (see the base class),
 * and reports the group's usage and water level at every resync.
 */
@ControllerConfiguration(name = "kvpoolinstancegroup")
@RBACRule(apiGroups = Names.GROUP, resources = "kvpools", verbs = {"get", "list", "watch"})
// the admin Secret of the pool (and, for tenants, the password Secret): read only
@RBACRule(apiGroups = "", resources = "secrets", verbs = {"get", "list", "watch"})
@RBACRule(apiGroups = "", resources = "events", verbs = {"create", "patch"})
public class KVPoolInstanceGroupReconciler extends ControlPlaneObjectReconciler<KVPoolInstanceGroup> {

    @Override
    protected String kind() {
        return "instance group";
    }

    @Override
    protected String collection() {
        return GroupMapping.COLLECTION;
    }

    @Override
    protected String pool(KVPoolInstanceGroup r) {
        return r.getSpec().pool;
    }

    @Override
    protected String objectName(KVPoolInstanceGroup r) {
        return GroupMapping.name(r);
    }

    @Override
    protected ControlPlaneObjectStatus newStatus(KVPoolInstanceGroup r) {
        r.setStatus(new KVPoolInstanceGroup.Status());
        return r.getStatus();
    }

    @Override
    protected Desired desired(KVPoolInstanceGroup r) throws InvalidSpec {
        return Desired.of(GroupMapping.desired(r));
    }

    @Override
    protected void observed(KVPoolInstanceGroup r, JsonNode actual) {
        KVPoolInstanceGroup.Usage u = GroupMapping.usage(actual);
        if (u != null) {
            r.getStatus().usage = u;
        }
    }
}
