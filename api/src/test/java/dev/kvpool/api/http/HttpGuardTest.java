package dev.kvpool.api.http;

import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.Test;

class HttpGuardTest {
    @Test
    void onlyUnambiguousFramingPasses() {
        assertNull(HttpGuard.refusal(List.of(), List.of()));
        assertNull(HttpGuard.refusal(List.of(), List.of("42")));
        assertNull(HttpGuard.refusal(List.of("chunked"), List.of()));
        assertNull(HttpGuard.refusal(List.of(" Chunked "), List.of()));
        assertTrue(HttpGuard.refusal(List.of("chunked"), List.of("2")).contains("both"));
        assertTrue(HttpGuard.refusal(List.of("gzip, chunked"), List.of()).contains("only transfer coding"));
        assertTrue(HttpGuard.refusal(List.of("chunked", "chunked"), List.of()).contains("only transfer coding"));
        assertTrue(HttpGuard.refusal(List.of(), List.of("2", "5")).contains("2 times"));
        for (String bad : new String[] {"-5", "abc", "", "1e3", "99999999999999999999999", "+4"}) {
            assertTrue(HttpGuard.refusal(List.of(), List.of(bad)) != null, bad);
        }
    }
}
