package dev.kvpool.control.common;

import dev.kvpool.api.proto.admin.ErrorCode;

/**
 * A refusal a caller can act on: HTTP status for REST (rendered as RFC 9457 problem+json), the field at fault, and the
 * KVCM error code the admin routes put in their envelope.
 */
public class ApiException extends RuntimeException {
    public final int status;
    public final String field;
    public final ErrorCode kvcmCode;

    public ApiException(int status, String field, String message, ErrorCode kvcmCode) {
        super(message);
        this.status = status;
        this.field = field;
        this.kvcmCode = kvcmCode;
    }

    public static ApiException invalid(String field, String message) {
        return new ApiException(400, field, message, ErrorCode.INVALID_ARGUMENT);
    }

    public static ApiException notFound(String what, String name) {
        return new ApiException(404, null, what + " '" + name + "' does not exist", ErrorCode.INTERNAL_ERROR);
    }

    public static ApiException conflict(String field, String message) {
        return new ApiException(409, field, message, ErrorCode.INTERNAL_ERROR);
    }

    public static ApiException duplicate(String field, String message) {
        return new ApiException(409, field, message, ErrorCode.DUPLICATE_ENTITY);
    }

    public static ApiException preconditionFailed(String message) {
        return new ApiException(412, "If-Match", message, ErrorCode.INTERNAL_ERROR);
    }

    public static ApiException preconditionRequired() {
        return new ApiException(428, "If-Match", "this update needs an If-Match header with the current ETag "
                + "(GET the resource first)", ErrorCode.INVALID_ARGUMENT);
    }

    public static ApiException forbidden(String message) {
        return new ApiException(403, null, message, ErrorCode.INVALID_ARGUMENT);
    }
}
