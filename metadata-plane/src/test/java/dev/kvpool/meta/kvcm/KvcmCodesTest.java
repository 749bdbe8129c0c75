package dev.kvpool.meta.kvcm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import dev.kvpool.api.proto.meta.ErrorCode;
import dev.kvpool.meta.core.MetaException;
import java.util.EnumSet;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Each domain refusal answers the §1.7 code KVCM answers for it, and no two refusals share a code. */
class KvcmCodesTest {
    @Test
    void eachKindHasItsOwnCode() {
        Map<MetaException.Kind, ErrorCode> expected = Map.of(
                MetaException.Kind.INVALID, ErrorCode.INVALID_ARGUMENT,
                MetaException.Kind.DUPLICATE, ErrorCode.DUPLICATE_ENTITY,
                MetaException.Kind.CAPACITY, ErrorCode.REACH_MAX_ENTITY_CAPACITY,
                MetaException.Kind.NO_INSTANCE, ErrorCode.INSTANCE_NOT_EXIST,
                MetaException.Kind.NOT_READY, ErrorCode.SERVICE_NOT_READY,
                MetaException.Kind.NOT_LEADER, ErrorCode.SERVER_NOT_LEADER,
                MetaException.Kind.UNSUPPORTED, ErrorCode.UNSUPPORTED,
                MetaException.Kind.INTERNAL, ErrorCode.INTERNAL_ERROR);
        assertEquals(EnumSet.allOf(MetaException.Kind.class), EnumSet.copyOf(expected.keySet()));
        expected.forEach((kind, code) -> assertEquals(code, KvcmCodes.code(kind), kind.name()));
    }

    @Test
    void aFailureThatIsNoRefusalHasNoCode() {
        assertEquals(ErrorCode.DUPLICATE_ENTITY, KvcmCodes.of(MetaException.duplicate("x")));
        assertNull(KvcmCodes.of(new IllegalStateException("x")));
    }
}
