package dev.kvpool.operator.crd;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.kvpool.api.naming.Identifiers;
import java.util.List;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/** The CRD name patterns accept exactly the names {@link Identifiers} accepts. */
class NamesTest {
    static final List<String> SAMPLES = List.of("instance1", "tp0", "tp_3", "nfs_01", "default", "_x", "a.b-c",
            "A", "9", "x".repeat(128), "x".repeat(129), "", ".", "..", "-a", ".a", "a/b", "a b", "a:b", "a{b}",
            "a%b", "é", "a\n", "user@example.com", "@x", "a@b", "a?b", "a#b");

    @Test
    void identifierPatternIsIdentifiers() {
        Pattern p = Pattern.compile(Names.IDENTIFIER);
        for (String s : SAMPLES) {
            assertEquals(Identifiers.valid(Identifiers.Kind.GROUP, s), p.matcher(s).matches(), "name: " + s);
            assertEquals(Identifiers.valid(Identifiers.Kind.STORAGE, s), p.matcher(s).matches(), "name: " + s);
        }
    }

    @Test
    void accountPatternIsIdentifiers() {
        Pattern p = Pattern.compile(Names.ACCOUNT);
        for (String s : SAMPLES) {
            assertEquals(Identifiers.valid(Identifiers.Kind.ACCOUNT, s), p.matcher(s).matches(), "name: " + s);
        }
    }
}
