package dev.kvpool.operator.crd;

/**
 * Constants shared by the custom resources. The name patterns are the OpenAPI form of
 * {@code dev.kvpool.api.naming.Identifiers} (checked against it by {@code NamesTest}), so a name the API server
 * accepts is one every KVPool service accepts.
 */
public final class Names {
    public static final String GROUP = "kvpool.dev";
    public static final String VERSION = "v1alpha1";

    /** Storage, instance group and storage-candidate names: 1-128 of A-Z a-z 0-9 . _ -, not starting with . or -. */
    public static final String IDENTIFIER = "^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$";
    /** Account (tenant) names: as {@link #IDENTIFIER}, plus '@' (e-mail addresses). */
    public static final String ACCOUNT = "^[A-Za-z0-9_@][A-Za-z0-9._@-]{0,127}$";
    /** A Kubernetes object name (DNS-1123 subdomain), for references to Secrets. */
    public static final String K8S_NAME = "^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$";

    /** The label that ties a KVPoolStorage, KVPoolInstanceGroup or KVPoolTenant to its KVPool (same namespace). */
    public static final String POOL_LABEL = "kvpool.dev/pool";

    private Names() {
    }
}
