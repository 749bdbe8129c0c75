package dev.kvpool.control.common;

import com.google.protobuf.Descriptors;
import com.google.protobuf.Message;
import dev.kvpool.api.limits.Limits;
import dev.kvpool.api.naming.Identifiers;
import dev.kvpool.api.naming.Text;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Checks of client input shared by REST and the KVCM admin API (HTTP and gRPC): every name against the one identifier
 * rule ({@link Identifiers}), opaque text and blobs against their length bounds, every number against its documented
 * range ({@link Limits} and {@link #MAX_VERSION} and the other maxima here). A failure is a 400 (KVCM: INVALID_ARGUMENT)
 * naming the field. They run before anything reaches the database: PostgreSQL refuses a NUL in text, and such a
 * refusal surfaced as a 500 (or INTERNAL_ERROR) instead of a validation error.
 */
public final class Inputs {
    private Inputs() {
    }

    /**
     * Versions clients may set (KVCM InstanceGroup.version): up to 2^53, so a JSON consumer that reads numbers as
     * doubles gets them exactly and {@code version + 1} never overflows.
     */
    public static final long MAX_VERSION = 1L << 53;
    /** Eviction trigger period: a day. */
    public static final long MAX_TRIGGER_PERIOD_SECONDS = 86_400;
    /** TTL of the TTL policy: 100 years. */
    public static final long MAX_TTL_SECONDS = 100L * 365 * 86_400;
    /** Reader lease before an evicted block's bytes are deleted (KVCM delay_before_delete_ms): an hour. */
    public static final long MAX_READER_LEASE_MS = 3_600_000;
    /** Lock shards of one instance's index (KVCM mutex_shard_num); the metadata plane allocates one lock each. */
    public static final long MAX_MUTEX_SHARDS = 1L << 16;
    /** Storage candidates of one group. */
    public static final int MAX_CANDIDATES = 256;
    /** Usage samples of one report (groups × storage types). */
    public static final int MAX_USAGE_SAMPLES = 65_536;
    /** Keys per file of a file-type storage (KVCM key_count_per_file). */
    public static final long MAX_KEYS_PER_FILE = 1L << 20;
    /** Milliseconds of the KVCM leader elector's campaign delay: a day. */
    public static final long MAX_CAMPAIGN_DELAY_MS = 86_400_000;

    /** {@code value} when it is a valid name of that kind; else 400 {@code field: why}. */
    public static String name(Identifiers.Kind kind, String field, String value) {
        String p = Identifiers.problem(kind, value);
        if (p != null) {
            throw ApiException.invalid(field, field + " (" + kind.what + "): " + p);
        }
        return value;
    }

    /**
     * A name used only to find and remove an existing object: the identifier rule, or, for objects created before
     * that rule (which allowed '/' and ':' in instance ids), any name without control characters up to 253
     * characters, so they can still be removed. Nothing is ever created under such a name.
     */
    public static String existingName(Identifiers.Kind kind, String field, String value) {
        if (Identifiers.valid(kind, value)) {
            return value;
        }
        if (value != null && !value.isEmpty() && Text.opaqueProblem(value, 253) == null) {
            return value;
        }
        return name(kind, field, value);
    }

    /** Opaque client text (trace ids, model names, paths, URIs): at most {@code max} characters, no control characters. */
    public static String text(String field, String value, int max) {
        String p = Text.opaqueProblem(value, max);
        if (p != null) {
            throw ApiException.invalid(field, field + ": " + p);
        }
        return value;
    }

    /**
     * An opaque blob KVCM passes through (user_data, extra): at most {@link Limits#MAX_BLOB} characters and no NUL
     * (PostgreSQL cannot store one); newlines and tabs are allowed, as in pretty-printed JSON.
     */
    public static String blob(String field, String value) {
        if (value == null) {
            return null;
        }
        if (value.length() > Limits.MAX_BLOB) {
            throw ApiException.invalid(field, field + ": must be at most " + Limits.MAX_BLOB + " characters, got "
                    + value.length());
        }
        int nul = value.indexOf('\0');
        if (nul >= 0) {
            throw ApiException.invalid(field, field + ": must not hold U+0000; character " + nul + " is U+0000");
        }
        return value;
    }

    /** An optional http(s) URL with a host and no credentials, at most 2048 characters; null when absent or empty. */
    public static String httpUrl(String field, String value) {
        if (value == null || value.isEmpty()) {
            return null;
        }
        String url = text(field, value, 2048);
        java.net.URI u;
        try {
            u = new java.net.URI(url);
        } catch (java.net.URISyntaxException e) {
            throw ApiException.invalid(field, field + " must be an http(s) URL, got '" + Text.safe(url) + "'");
        }
        if (u.getScheme() == null || !(u.getScheme().equals("http") || u.getScheme().equals("https"))
                || u.getHost() == null || u.getRawUserInfo() != null) {
            throw ApiException.invalid(field, field + " must be an http(s) URL with a host and no credentials, got '"
                    + Text.safe(url) + "'");
        }
        return url;
    }

    /** {@code v} when in [min, max]; else 400 naming the field and the range. */
    public static long range(String field, long v, long min, long max) {
        String p = Limits.range(v, min, max);
        if (p != null) {
            throw ApiException.invalid(field, field + " " + p);
        }
        return v;
    }

    /** A fraction or percentage given as a double: finite and in [min, max]. */
    public static double range(String field, double v, double min, double max) {
        if (!Double.isFinite(v) || v < min || v > max) {
            throw ApiException.invalid(field, field + " must be a finite number between " + min + " and " + max
                    + ", got " + v);
        }
        return v;
    }

    /** {@code a + b}, or 400 naming the field when the sum does not fit a long. */
    public static long add(String field, long a, long b) {
        try {
            return Math.addExact(a, b);
        } catch (ArithmeticException e) {
            throw ApiException.invalid(field, field + ": the sum overflows a 64-bit integer");
        }
    }

    /** A list of at most {@code max} entries. */
    public static <T> List<T> count(String field, List<T> list, int max) {
        if (list != null && list.size() > max) {
            throw ApiException.invalid(field, field + " may hold at most " + max + " entries, got " + list.size());
        }
        return list;
    }

    /**
     * Checks every string of a KVCM message, at any depth, before any of it is used: blobs ({@code blobs}, by field
     * name) against {@link #blob}, the fields named in {@code skip} not at all (their content is checked where it
     * is parsed), everything else as opaque text of at most {@link Limits#MAX_TEXT} characters. The field named in
     * an error is the proto path, e.g. {@code instance_group.cache_config.meta_indexer_config.meta_storage_backend_config.storage_uri}.
     */
    public static void strings(Message m, String prefix, Set<String> blobs, Set<String> skip) {
        for (Map.Entry<Descriptors.FieldDescriptor, Object> e : m.getAllFields().entrySet()) {
            Descriptors.FieldDescriptor f = e.getKey();
            String path = prefix.isEmpty() ? f.getName() : prefix + "." + f.getName();
            if (skip.contains(f.getName())) {
                continue;
            }
            if (f.isRepeated()) {
                List<?> values = (List<?>) e.getValue();
                for (int i = 0; i < values.size(); i++) {
                    one(f, values.get(i), path + "[" + i + "]", blobs, skip);
                }
            } else {
                one(f, e.getValue(), path, blobs, skip);
            }
        }
    }

    private static void one(Descriptors.FieldDescriptor f, Object v, String path, Set<String> blobs, Set<String> skip) {
        if (v instanceof String s) {
            if (blobs.contains(f.getName())) {
                blob(path, s);
            } else {
                text(path, s, Limits.MAX_TEXT);
            }
        } else if (v instanceof Message m) {
            strings(m, path, blobs, skip);
        }
    }
}
