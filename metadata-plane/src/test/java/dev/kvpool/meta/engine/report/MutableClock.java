package dev.kvpool.meta.engine.report;

import java.time.Clock;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.util.concurrent.atomic.AtomicLong;

/** A clock the test moves: liveness and rate limits are tested without sleeping. */
final class MutableClock extends Clock {
    private final AtomicLong ms;

    MutableClock(long startMs) {
        ms = new AtomicLong(startMs);
    }

    void advance(long deltaMs) {
        ms.addAndGet(deltaMs);
    }

    @Override
    public long millis() {
        return ms.get();
    }

    @Override
    public Instant instant() {
        return Instant.ofEpochMilli(ms.get());
    }

    @Override
    public ZoneId getZone() {
        return ZoneOffset.UTC;
    }

    @Override
    public Clock withZone(ZoneId zone) {
        return this;
    }
}
