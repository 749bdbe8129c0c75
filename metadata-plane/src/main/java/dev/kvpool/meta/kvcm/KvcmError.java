package dev.kvpool.meta.kvcm;

import dev.kvpool.api.proto.meta.ErrorCode;

/** A logical KVCM error: travels in header.status, never as an HTTP or gRPC status. */
public final class KvcmError extends RuntimeException {
    public final ErrorCode code;

    public KvcmError(ErrorCode code, String message) {
        super(message, null, false, false);
        this.code = code;
    }

    public static KvcmError invalid(String message) {
        return new KvcmError(ErrorCode.INVALID_ARGUMENT, message);
    }

    public static KvcmError internal(String message) {
        return new KvcmError(ErrorCode.INTERNAL_ERROR, message);
    }

    public static KvcmError capacity(String message) {
        return new KvcmError(ErrorCode.REACH_MAX_ENTITY_CAPACITY, message);
    }
}
