package dev.kvpool.control.stats;

import dev.kvpool.api.naming.Text;
import dev.kvpool.control.common.ApiException;
import dev.kvpool.control.usage.UsageService;
import java.time.Duration;
import java.time.Instant;
import java.time.format.DateTimeParseException;
import java.util.List;
import java.util.Locale;

/**
 * The time range and step of a series query: {@code since} (default: a day before {@code until}), {@code until}
 * (default: now), {@code step} as an ISO-8601 duration or {@code 1m|5m|15m|1h|6h|1d}, a whole number of minutes from a
 * minute to 31 days (default: the smallest of 1m, 5m, 15m, 1h, 6h, 1d giving at most {@link #DEFAULT_POINTS} buckets).
 * Buckets start at multiples of the step since the epoch; {@code since} is rounded down to one.
 */
public record Range(long since, long until, long step) {
    public static final Duration DEFAULT_SPAN = Duration.ofDays(1);
    public static final int DEFAULT_POINTS = 500;
    /** At most this many buckets in one answer. */
    public static final int MAX_POINTS = 10_000;
    public static final long MAX_STEP = Duration.ofDays(31).toSeconds();
    static final List<Long> DEFAULT_STEPS = List.of(60L, 300L, 900L, 3600L, 21_600L, 86_400L);

    public Instant sinceInstant() {
        return Instant.ofEpochSecond(since);
    }

    public Instant untilInstant() {
        return Instant.ofEpochSecond(until);
    }

    public String stepText() {
        return Duration.ofSeconds(step).toString();
    }

    public static Range parse(String sinceText, String untilText, String stepText, Instant now) {
        Instant until = untilText == null ? now : instant("until", untilText);
        Instant since = sinceText == null ? until.minus(DEFAULT_SPAN) : instant("since", sinceText);
        if (!since.isBefore(until)) {
            throw ApiException.invalid("since", "since (" + since + ") must be before until (" + until + ")");
        }
        long s = since.getEpochSecond(), u = until.getEpochSecond() + (until.getNano() > 0 ? 1 : 0);
        long step;
        if (stepText == null) {
            step = DEFAULT_STEPS.stream().filter(x -> (u - s + x - 1) / x <= DEFAULT_POINTS).findFirst()
                    .orElse(DEFAULT_STEPS.getLast());
        } else {
            step = step(stepText);
        }
        long aligned = Math.floorDiv(s, step) * step;
        long points = (u - aligned + step - 1) / step;
        if (points > MAX_POINTS) {
            throw ApiException.invalid("step", "step " + Duration.ofSeconds(step) + " over " + since + " .. " + until
                    + " makes " + points + " buckets, at most " + MAX_POINTS + ": choose a larger step or a shorter range");
        }
        return new Range(aligned, u, step);
    }

    static long step(String v) {
        String t = v.trim().toLowerCase(Locale.ROOT);
        long seconds;
        try {
            seconds = switch (t) {
                case "1m" -> 60;
                case "5m" -> 300;
                case "15m" -> 900;
                case "1h" -> 3600;
                case "6h" -> 21_600;
                case "1d" -> 86_400;
                default -> {
                    Duration d = Duration.parse(v.trim().toUpperCase(Locale.ROOT));
                    if (d.getNano() != 0 || d.getSeconds() % 60 != 0) {
                        throw ApiException.invalid("step", "step must be a whole number of minutes, got '"
                                + Text.safe(v) + "'");
                    }
                    yield d.getSeconds();
                }
            };
        } catch (DateTimeParseException | ArithmeticException e) {
            throw ApiException.invalid("step", "step must be an ISO-8601 duration such as PT5M or one of "
                    + "1m, 5m, 15m, 1h, 6h, 1d, got '" + Text.safe(v) + "'");
        }
        if (seconds < 60 || seconds > MAX_STEP) {
            throw ApiException.invalid("step", "step must be between PT1M and P31D, got '" + Text.safe(v) + "'");
        }
        return seconds;
    }

    public static Instant instant(String f, String v) {
        Instant t;
        try {
            t = Instant.parse(v);
        } catch (DateTimeParseException e) {
            throw ApiException.invalid(f, f + " must be an ISO-8601 instant such as 2026-11-23T01:00:00Z, got '"
                    + Text.safe(v) + "'");
        }
        if (t.isBefore(UsageService.EARLIEST) || t.isAfter(UsageService.LATEST)) {
            throw ApiException.invalid(f, f + " must be between " + UsageService.EARLIEST + " and "
                    + UsageService.LATEST + ", got " + t);
        }
        return t;
    }
}
