package dev.kvpool.testing.hostile;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.Test;

class HostileJsonTest {
    private static final String VALID = "{\"id\":\"a\",\"n\":1,\"inner\":{\"xs\":[1,2,3],\"s\":\"b\"}}";

    @Test
    void everyFieldAtEveryDepthGetsEveryHostileValue() {
        List<String> paths = HostileJson.paths(new com.fasterxml.jackson.databind.ObjectMapper().valueToTree(
                java.util.Map.of("a", java.util.Map.of("b", List.of(1, 2, 3)))), "");
        assertEquals(List.of("a", "a.b", "a.b[0]", "a.b[1]"), paths);
        List<HostileJson.Case> cases = HostileJson.fields(VALID);
        // id, n, inner, inner.xs, inner.xs[0], inner.xs[1], inner.s: each hostile value + nesting; 3 top-level dups
        assertEquals(7 * (HostileJson.HOSTILE_VALUES.size() + 1) + 3, cases.size());
        assertTrue(cases.stream().anyMatch(c -> c.label().equals("inner.s = NUL") && c.text().contains("\\u0000")));
        assertTrue(cases.stream().anyMatch(c -> c.label().equals("id given twice")
                && c.text().startsWith("{\"id\":\"a\",\"id\":\"a\"")));
        assertTrue(cases.stream().anyMatch(c -> c.label().equals("inner.xs[1] nested 1000 deep")
                && c.text().contains("[2,[[[[") || c.text().contains("[1,[[[[")));
    }

    @Test
    void theWholeBodyBrokenAndFuzzedDeterministically() {
        assertTrue(HostileJson.broken(VALID).stream().anyMatch(c -> c.label().startsWith("truncated")));
        assertEquals(HostileJson.fuzz(VALID, 7, 20).stream().map(HostileJson.Case::text).toList(),
                HostileJson.fuzz(VALID, 7, 20).stream().map(HostileJson.Case::text).toList());
        assertEquals(5_003 + VALID.length() - "[1,2,3]".length(), HostileJson.withArray(VALID, "inner.xs", 2_501).body().length);
    }

    @Test
    void rawRepliesAreParsedByTheirFraming() {
        var r = RawHttp.parse(RawHttp.ascii("HTTP/1.1 400 Bad Request\r\nContent-Length: 2\r\nX-A: b\r\n\r\n{}"), false, System.nanoTime());
        assertEquals(400, r.status());
        assertEquals("{}", r.body());
        assertEquals("b", r.header("X-A"));
        assertEquals(null, RawHttp.parse(RawHttp.ascii("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n{}"), false, 0));
        var c = RawHttp.parse(RawHttp.ascii("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n"), false, 0);
        assertEquals("{}", c.body());
    }
}
