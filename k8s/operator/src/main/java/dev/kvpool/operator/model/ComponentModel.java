package dev.kvpool.operator.model;

import dev.kvpool.operator.crd.KVPool;
import io.fabric8.kubernetes.api.model.OwnerReference;
import java.util.Map;

/** What every component's model of one KVPool shares: its name, image, labels and owner, from {@link Workloads}. */
abstract class ComponentModel {
    protected final KVPool pool;
    protected final Workloads w;

    ComponentModel(KVPool pool, String component) {
        this.pool = pool;
        this.w = Workloads.of(pool, component);
    }

    /** {@code <pool>-<component>}: the name of the component's objects. */
    public String name() {
        return w.name();
    }

    public String image() {
        return w.image();
    }

    /** The labels of every object and the pod template; the first three also select the pods. */
    public Map<String, String> labels() {
        return w.labels();
    }

    public Map<String, String> selector() {
        return w.selector();
    }

    public OwnerReference ownerReference() {
        return w.ownerReference();
    }
}
