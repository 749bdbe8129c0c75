package dev.kvpool.meta.core;

/**
 * A refusal of the metadata plane's domain (registry, write, query, reclaim, config), in its own words. The
 * transports map each {@link Kind} to their wire: the KVCM adapters to an ErrorCode in header.status, REST to a
 * 4xx/5xx problem. No domain package knows those wire types.
 */
public final class MetaException extends RuntimeException {
    /** Why a call was refused; each maps to exactly one KVCM ErrorCode (see the kvcm package's mapping). */
    public enum Kind {
        /** A field of the request is wrong (KVCM INVALID_ARGUMENT). */
        INVALID,
        /** Something the request names exists already (DUPLICATE_ENTITY). */
        DUPLICATE,
        /** A quota, an index or a count is full (REACH_MAX_ENTITY_CAPACITY). */
        CAPACITY,
        /** The instance is not registered (INSTANCE_NOT_EXIST). */
        NO_INSTANCE,
        /** The plane is starting or recovering (SERVICE_NOT_READY). */
        NOT_READY,
        /** Another replica leads; writes go there (SERVER_NOT_LEADER). */
        NOT_LEADER,
        /** A mode the plane does not implement (UNSUPPORTED). */
        UNSUPPORTED,
        /** The plane's own state does not allow the call (INTERNAL_ERROR). */
        INTERNAL
    }

    private final Kind kind;

    public MetaException(Kind kind, String message) {
        super(message, null, false, false); // refusals are expected: no stack trace to fill
        this.kind = kind;
    }

    public Kind kind() {
        return kind;
    }

    public static MetaException invalid(String message) {
        return new MetaException(Kind.INVALID, message);
    }

    public static MetaException internal(String message) {
        return new MetaException(Kind.INTERNAL, message);
    }

    public static MetaException capacity(String message) {
        return new MetaException(Kind.CAPACITY, message);
    }

    public static MetaException duplicate(String message) {
        return new MetaException(Kind.DUPLICATE, message);
    }

    public static MetaException noInstance(String message) {
        return new MetaException(Kind.NO_INSTANCE, message);
    }
}
