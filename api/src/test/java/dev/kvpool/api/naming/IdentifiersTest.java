package dev.kvpool.api.naming;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import org.junit.jupiter.api.Test;

class IdentifiersTest {
    @Test
    void kvcmsOwnNamesPass() {
        for (String n : new String[] {"instance1", "tp0", "tp_3", "nfs_01", "default", "default_quota_group",
                "8f14e45f-ceea-467f-a0e6-52d6b1a2c6a1", "Qwen2.5-7B", "a".repeat(128)}) {
            assertNull(Identifiers.problem(Identifiers.Kind.INSTANCE, n), n);
        }
        assertTrue(Identifiers.valid(Identifiers.Kind.ACCOUNT, "ops@example.com"));
        assertFalse(Identifiers.valid(Identifiers.Kind.INSTANCE, "ops@example.com"));
    }

    @Test
    void theRefusalNamesTheFieldAndTheCharacter() {
        var e = assertThrows(Identifiers.InvalidIdentifierException.class,
                () -> Identifiers.require(Identifiers.Kind.INSTANCE, "instance_id", "a/b"));
        assertEquals("instance_id: must hold only letters, digits, '.', '_' and '-'; character 1 is '/'", e.getMessage());
        assertEquals("instance_id", e.field);
        assertEquals("must not start with '.'", Identifiers.problem(Identifiers.Kind.INSTANCE, ".."));
        assertEquals("must not be empty", Identifiers.problem(Identifiers.Kind.SPEC, ""));
        assertTrue(Identifiers.problem(Identifiers.Kind.SPEC, "x\u0000").endsWith("character 1 is U+0000"));
        assertTrue(Identifiers.problem(Identifiers.Kind.GROUP, "a".repeat(129)).startsWith("must be at most 128"));
    }

    @Property(tries = 5000)
    void aValidNameIsOnePlainSafeSegment(@ForAll String s) {
        if (!Identifiers.valid(Identifiers.Kind.INSTANCE, s)) {
            return;
        }
        assertFalse(s.equals(".") || s.equals("..") || s.isEmpty() || s.length() > 128);
        assertTrue(s.chars().allMatch(c -> c < 0x7f && c > 0x20 && "/\\?#&%:{}@ ".indexOf(c) < 0), s);
    }

    @Test
    void textIsMadeSafeForHeadersAndLogs() {
        assertEquals("a\\u000d\\u000aX-Injected: 1\\u0000", Text.safe("a\r\nX-Injected: 1\u0000"));
        assertEquals("back\\\\slash \\u00e4", Text.safe("back\\slash ä"));
        assertEquals(Text.MAX_ECHO + 3, Text.safe("x".repeat(1000)).length());
        assertNull(Text.opaqueProblem("trace-1 with spaces", 64));
        assertTrue(Text.opaqueProblem("a\tb", 64).contains("U+0009"));
        assertTrue(Text.opaqueProblem("x".repeat(65), 64).startsWith("must be at most 64"));
    }
}
