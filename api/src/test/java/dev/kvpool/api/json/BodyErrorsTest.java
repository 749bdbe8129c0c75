package dev.kvpool.api.json;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class BodyErrorsTest {
    enum Policy { LRU, LFU }

    record Inner(Integer softPercent, Policy policy) {
    }

    record Body(long[] keys, List<Long> tokens, Long quota, boolean global, String name, Inner inner,
                Map<String, Long> quotas) {
    }

    private final ObjectMapper strict = BodyErrors.strict(new ObjectMapper(), true);
    private final ObjectMapper lenient = BodyErrors.strict(new ObjectMapper(), false);

    private BodyErrors.Fault fault(ObjectMapper m, String json) {
        Exception e = assertThrows(Exception.class, () -> m.readValue(json, Body.class), json);
        BodyErrors.Fault f = BodyErrors.of(new RuntimeException("wrapped", e));
        assertTrue(f != null, () -> "no fault for " + json + ": " + e);
        return f;
    }

    @Test
    void namesTheFieldAndWhatItGot() {
        assertEquals("keys[1]: expected an integer, got 1.5", fault(strict, "{\"keys\":[1,1.5]}").message());
        assertEquals("keys: expected an array of integers, got the string \"x\"",
                fault(strict, "{\"keys\":\"x\"}").message());
        assertEquals("tokens[0]: expected an integer, got the string \"abc\"",
                fault(strict, "{\"tokens\":[\"abc\"]}").message());
        assertEquals("quota: expected an integer, got 2.5", fault(strict, "{\"quota\":2.5}").message());
        assertEquals("global: expected true or false, got the string \"yes\"",
                fault(strict, "{\"global\":\"yes\"}").message());
        assertEquals("keys[1]: must not be null", fault(strict, "{\"keys\":[1,null]}").message());
        assertEquals("inner.softPercent: expected an integer, got an array",
                fault(strict, "{\"inner\":{\"softPercent\":[1]}}").message());
        assertEquals("inner.policy: expected one of [LRU, LFU], got the string \"MRU\"",
                fault(strict, "{\"inner\":{\"policy\":\"MRU\"}}").message());
        assertEquals("inner.policy: expected one of [LRU, LFU], got 1",
                fault(strict, "{\"inner\":{\"policy\":1}}").message());
        assertEquals("quotas.nfs: expected an integer, got true",
                fault(strict, "{\"quotas\":{\"nfs\":true}}").message());
        assertEquals("expected an object, got an array", fault(strict, "[1,2]").message());
    }

    @Test
    void unknownFieldsAreRejectedOnlyWhenAsked() throws Exception {
        BodyErrors.Fault f = fault(strict, "{\"keys\":[1],\"ofsets\":[0]}");
        assertEquals("ofsets", f.field());
        assertTrue(f.detail().startsWith("unknown field; known fields: global, inner, keys, name"), f.detail());
        assertEquals(1, lenient.readValue("{\"keys\":[1],\"ofsets\":[0]}", Body.class).keys().length);
    }

    @Test
    void malformedJsonSaysWhere() {
        BodyErrors.Fault f = fault(strict, "{\"keys\":[1,2}");
        assertNull(f.field());
        assertEquals("malformed JSON at line 1, column 13: Unexpected close marker '}': expected ']' (for Array "
                + "starting at [line: 1, column: 9])", f.detail());
        assertTrue(fault(strict, "garbage").detail().startsWith("malformed JSON at line 1"));
        assertTrue(fault(strict, "{\"keys\":[1]} {}").detail().contains("Trailing token"),
                fault(strict, "{\"keys\":[1]} {}").detail());
    }

    @Test
    void aValueOfOneKindIsNeverTakenForAnother() {
        assertEquals("keys[0]: expected an integer, got the string \"7\"", fault(strict, "{\"keys\":[\"7\"]}").message());
        assertEquals("quota: expected an integer, got the string \"30000000000\"",
                fault(strict, "{\"quota\":\"30000000000\"}").message());
        assertEquals("name: expected a string, got 42", fault(strict, "{\"name\":42}").message());
        assertEquals("name: expected a string, got true", fault(strict, "{\"name\":true}").message());
        assertEquals("name: expected a string, got 1.5", fault(strict, "{\"name\":1.5}").message());
        assertEquals("global: expected true or false, got 1", fault(strict, "{\"global\":1}").message());
    }

    @Test
    void duplicateKeysAndDeepNestingAreRefused() {
        BodyErrors.Fault dup = fault(strict, "{\"name\":\"a\",\"name\":\"b\"}");
        assertTrue(dup.detail().contains("Duplicate field 'name'"), dup.detail());
        String deep = "{\"unknown\":" + "[".repeat(ProtoJson.MAX_NESTING + 1) + "]".repeat(ProtoJson.MAX_NESTING + 1) + "}";
        BodyErrors.Fault f = fault(lenient, deep);
        assertTrue(f.detail().contains("nesting depth"), f.detail());
    }

    @Test
    void aServerSideDefinitionProblemIsNotTheClientsFault() {
        class NoGetters {
            private final Object self = this;
        }
        Exception e = assertThrows(Exception.class, () -> new ObjectMapper().writeValueAsString(new NoGetters()));
        assertNull(BodyErrors.of(e), e.toString());
        assertNull(BodyErrors.of(new IllegalStateException("not json")));
    }
}
