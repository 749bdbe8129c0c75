package dev.kvpool.operator.model;

import dev.kvpool.operator.crd.KVPoolSpec;
import io.fabric8.kubernetes.api.model.GenericKubernetesResource;
import io.fabric8.kubernetes.api.model.GenericKubernetesResourceBuilder;
import io.fabric8.kubernetes.api.model.ObjectMeta;
import io.fabric8.kubernetes.api.model.Quantity;
import java.math.BigDecimal;
import java.util.LinkedHashMap;
import java.util.Map;

/** What the managed engines' models share: storage defaults and checks, and the custom resources they build. */
final class Engines {
    static final Quantity DEFAULT_STORAGE = new Quantity("10Gi");

    private Engines() {
    }

    /** spec...managed.storage or 10Gi; refuses a size of zero or less (a claim the API server would reject later). */
    static Quantity storage(KVPoolSpec.Managed m, String engine) {
        if (m == null || m.storage == null) {
            return DEFAULT_STORAGE;
        }
        BigDecimal bytes;
        try {
            bytes = Quantity.getAmountInBytes(m.storage);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("spec.engines." + engine + ".managed.storage " + m.storage
                    + " is not a quantity", e);
        }
        if (bytes.signum() <= 0) {
            throw new IllegalArgumentException("spec.engines." + engine + ".managed.storage must be above 0, not "
                    + m.storage);
        }
        return m.storage;
    }

    /** A custom resource of another operator (no Java model of it here: the fields are checked in comments). */
    static GenericKubernetesResource resource(String apiVersion, String kind, ObjectMeta metadata,
            Map<String, Object> spec) {
        return new GenericKubernetesResourceBuilder()
                .withApiVersion(apiVersion)
                .withKind(kind)
                .withMetadata(metadata)
                .addToAdditionalProperties("spec", spec)
                .build();
    }

    /** A map that keeps its insertion order, so that equal pools give equal (and equally serialized) objects. */
    static Map<String, Object> map(Object... kv) {
        Map<String, Object> m = new LinkedHashMap<>();
        for (int i = 0; i < kv.length; i += 2) {
            if (kv[i + 1] != null) {
                m.put((String) kv[i], kv[i + 1]);
            }
        }
        return m;
    }
}
