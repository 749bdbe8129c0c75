package dev.kvpool.operator.crd;

import io.fabric8.kubernetes.api.model.Namespaced;
import io.fabric8.kubernetes.client.CustomResource;
import io.fabric8.kubernetes.model.annotation.Group;
import io.fabric8.kubernetes.model.annotation.ShortNames;
import io.fabric8.kubernetes.model.annotation.Version;

/** One KVPool installation: control plane, metadata plane, data agents and the engines they use. */
@Group(Names.GROUP)
@Version(Names.VERSION)
@ShortNames("kvp")
public class KVPool extends CustomResource<KVPoolSpec, KVPoolStatus> implements Namespaced {
}
