package dev.kvpool.meta.index;

/**
 * A call to a remote index store failed: unreachable, timed out, or answered with an error. The message names the
 * call and the cause, so callers that report it need no stack trace.
 */
public class StoreException extends RuntimeException {
    public StoreException(String message) {
        super(message);
    }

    public StoreException(String message, Throwable cause) {
        super(message, cause);
    }
}
