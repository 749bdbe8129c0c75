package dev.kvpool.api.logging;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.kvpool.testing.MutableClock;
import java.io.UncheckedIOException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import org.jboss.logging.Logger;
import org.junit.jupiter.api.Test;

/** A dependency that stays down is one line, then one per interval, then one when it is back. */
class FailureLogTest {
    record Line(Logger.Level level, String text, Throwable thrown) {
    }

    /** A logger that keeps what it is given. */
    static final class Recording extends Logger {
        final List<Line> lines = new ArrayList<>();

        Recording() {
            super("test");
        }

        @Override
        public boolean isEnabled(Level level) {
            return true;
        }

        @Override
        protected void doLog(Level level, String fqcn, Object message, Object[] params, Throwable thrown) {
            lines.add(new Line(level, String.valueOf(message), thrown));
        }

        @Override
        protected void doLogf(Level level, String fqcn, String format, Object[] params, Throwable thrown) {
            lines.add(new Line(level, String.format(format, params), thrown));
        }
    }

    @Test
    void aStreakIsOneLineThenOnePerIntervalThenOneWhenItEnds() {
        Recording log = new Recording();
        MutableClock clock = new MutableClock(Instant.parse("2026-11-28T06:00:00Z"));
        FailureLog f = new FailureLog(log, "pool", Duration.ofMillis(200), UncheckedIOException.class::isInstance,
                clock);
        f.ok();
        assertEquals(0, log.lines.size(), "nothing to say while it works");
        for (int i = 0; i < 50; i++) {
            f.failed(new UncheckedIOException("connection refused", new java.io.IOException()));
        }
        assertEquals(1, log.lines.size(), "50 failures in a burst: one line");
        assertEquals("pool: failing: connection refused", log.lines.getFirst().text());
        assertNull(log.lines.getFirst().thrown(), "an expected failure says it all without a trace");
        assertNull(f.failingFor(Duration.ofSeconds(60)));
        clock.advance(199);
        f.failed(new UncheckedIOException("connection refused", new java.io.IOException()));
        assertEquals(1, log.lines.size(), "within the interval: still one line");
        clock.advance(1); // the 200 ms interval has passed
        f.failed(new UncheckedIOException("connection refused", new java.io.IOException()));
        assertEquals(2, log.lines.size());
        assertEquals("pool: still failing after 0 s (51 more failures since the last report): connection refused",
                log.lines.get(1).text());
        assertNull(f.failingFor(Duration.ofSeconds(60)));
        clock.advance(Duration.ofSeconds(60));
        assertEquals("connection refused", f.failingFor(Duration.ofSeconds(60)), "failing for 60.2 s");
        f.ok();
        f.ok();
        assertEquals(3, log.lines.size());
        assertEquals("pool: working again after 60 s and 52 failures", log.lines.get(2).text());
        assertNull(f.failingFor(Duration.ZERO));
        f.failed(new IllegalStateException("bug"));
        assertEquals(4, log.lines.size(), "a new streak starts with a line");
        assertNotNull(log.lines.get(3).thrown(), "an unexpected failure keeps its stack trace");
    }
}
