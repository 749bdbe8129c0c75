package dev.kvpool.testing;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A clock the test moves: code that takes a {@link Clock} is tested for liveness, rate limits and expiry without
 * sleeping. UTC, millisecond resolution; safe to read from other threads while the test advances it.
 */
public final class MutableClock extends Clock {
    private final AtomicLong ms;

    public MutableClock(long startMs) {
        ms = new AtomicLong(startMs);
    }

    public MutableClock(Instant start) {
        this(start.toEpochMilli());
    }

    public void advance(long deltaMs) {
        ms.addAndGet(deltaMs);
    }

    public void advance(Duration d) {
        advance(d.toMillis());
    }

    public void set(Instant now) {
        ms.set(now.toEpochMilli());
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
