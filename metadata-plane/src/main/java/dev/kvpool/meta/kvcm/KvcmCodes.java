package dev.kvpool.meta.kvcm;

import dev.kvpool.api.proto.meta.ErrorCode;
import dev.kvpool.meta.core.MetaException;

/** The one mapping from the domain's refusals to KVCM's header.status codes (§1.7). */
public final class KvcmCodes {
    private KvcmCodes() {
    }

    public static ErrorCode code(MetaException.Kind kind) {
        return switch (kind) {
            case INVALID -> ErrorCode.INVALID_ARGUMENT;
            case DUPLICATE -> ErrorCode.DUPLICATE_ENTITY;
            case CAPACITY -> ErrorCode.REACH_MAX_ENTITY_CAPACITY;
            case NO_INSTANCE -> ErrorCode.INSTANCE_NOT_EXIST;
            case NOT_READY -> ErrorCode.SERVICE_NOT_READY;
            case NOT_LEADER -> ErrorCode.SERVER_NOT_LEADER;
            case UNSUPPORTED -> ErrorCode.UNSUPPORTED;
            case INTERNAL -> ErrorCode.INTERNAL_ERROR;
        };
    }

    /** The code of a refusal (a MetaException's kind); null for anything else. */
    public static ErrorCode of(Throwable e) {
        return e instanceof MetaException m ? code(m.kind()) : null;
    }
}
