package dev.kvpool.meta.store.redis;

/** Redis answered with an error, did not answer in time, or could not be reached; the message says which call. */
public final class RedisStoreException extends dev.kvpool.meta.index.StoreException {
    public RedisStoreException(String message) {
        super(message);
    }

    public RedisStoreException(String message, Throwable cause) {
        super(message, cause);
    }
}
