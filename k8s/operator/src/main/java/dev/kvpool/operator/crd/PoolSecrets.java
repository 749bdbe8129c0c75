package dev.kvpool.operator.crd;

/**
 * The Secret that holds a pool's control-plane admin credentials: {@code <pool>-admin} in the pool's namespace, keys
 * {@value #USERNAME_KEY} and {@value #PASSWORD_KEY}. The KVPool reconciler creates it and hands the password to the
 * control plane as {@value #ADMIN_PASSWORD_ENV}; the storage, instance-group and tenant reconcilers read it to call the
 * control plane's REST API. One place for these names, so both sides agree.
 */
public final class PoolSecrets {
    public static final String ADMIN_SUFFIX = "-admin";
    public static final String USERNAME_KEY = "username";
    public static final String PASSWORD_KEY = "password";
    /** The control plane's bootstrap admin account ({@code kvpool.control.bootstrap-admin.name}). */
    public static final String DEFAULT_ADMIN_USERNAME = "admin";
    /** The control plane's environment variable for the bootstrap admin's password. */
    public static final String ADMIN_PASSWORD_ENV = "KVPOOL_ADMIN_PASSWORD";

    private PoolSecrets() {
    }

    public static String adminSecretName(String pool) {
        return pool + ADMIN_SUFFIX;
    }
}
