package dev.kvpool.meta.engine.report;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.kvpool.meta.store.embedded.EmbeddedStore;
import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Block-key text, s_version handling, and the persisted records surviving a reopen of the embedded store. */
class ReportFormsTest {
    @TempDir
    Path dir;

    @Test
    void blockKeys() {
        assertEquals(-1L, BlockKeys.parse("18446744073709551615"));
        assertEquals(-1L, BlockKeys.parse("-1"));
        assertEquals(Long.MIN_VALUE, BlockKeys.parse("-9223372036854775808"));
        assertEquals(Long.MIN_VALUE, BlockKeys.parse("9223372036854775808"));
        assertEquals(1L, BlockKeys.parse("01"));
        for (String bad : new String[] {"", "+1", " 1", "1 ", "-", "1e3", "0x1", "18446744073709551616",
                "-9223372036854775809", "1".repeat(41)}) {
            assertThrows(IllegalArgumentException.class, () -> BlockKeys.parse(bad), bad);
        }
    }

    @Test
    void sVersion() {
        String t = "0123456789abcdef0123456789abcdef";
        assertEquals("rtp://h/hbm?s_version=" + t, Uris.withVersion("rtp://h/hbm", t));
        assertEquals("rtp://h/hbm?size=1&s_version=" + t, Uris.withVersion("rtp://h/hbm?size=1", t));
        assertEquals(t, Uris.versionOf(Uris.withVersion("rtp://h/hbm?size=1", t)));
        assertEquals("", Uris.versionOf("rtp://h/hbm"), "legacy: no s_version");
        assertNull(Uris.versionOf("rtp://h/hbm?s_version=xyz"), "malformed token");
        assertNull(Uris.versionOf("rtp://h/hbm?s_version=" + t + "&s_version=" + t), "twice");
        assertNotNull(Uris.problem("rtp://h/hbm?s_version=" + t));
        assertNotNull(Uris.problem("relative/path"));
        assertNull(Uris.problem("event_report://10.0.0.8:8080/hbm?size=2097152"));
        assertTrue(Generations.valid(Generations.next()));
    }

    @Test
    void recordsSurviveAReopenOfTheEmbeddedStore() throws Exception {
        var opts = new EmbeddedStore.Options(dir, 4, false, Duration.ofMillis(50), 1L << 20);
        Reporter r = new Reporter("inst-1", true, "10.0.0.1:80");
        Map<String, Reporter.Spec> specs = new LinkedHashMap<>();
        specs.put("s0", Reporter.Spec.of("rtp://a?s_version=0123456789abcdef0123456789abcdef"));
        specs.put("s1", Reporter.Spec.of("rtp://b"));
        try (EmbeddedStore s = new EmbeddedStore(opts)) {
            ReportRecords rec = new ReportRecords(s);
            rec.put(r, -5, "hbm", specs);
            rec.put(r, 6, "disk", specs);
            rec.remove(r, 6, "disk");
            s.sync();
        }
        try (EmbeddedStore s = new EmbeddedStore(opts)) {
            var loaded = new ReportRecords(s).load("inst-1");
            assertEquals(1, loaded.size());
            var l = loaded.get(0);
            assertTrue(l.l2());
            assertEquals("10.0.0.1:80", l.host());
            assertEquals("hbm", l.medium());
            assertEquals(-5, l.key());
            assertEquals(specs, l.specs());
        }
    }
}
