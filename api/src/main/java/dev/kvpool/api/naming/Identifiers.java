package dev.kvpool.api.naming;

/**
 * The one rule set for names a client chooses that end up in a file path, a URI, a Redis key, a Kafka key, a
 * metric tag or a log line: instance ids, instance group and storage names, spec and spec-group names, account
 * names. Every entry of every service (KVCM HTTP and gRPC, REST, the KVCM admin API, the startup file, the data
 * agent, the control plane's snapshot and events) checks them here, so one rule holds everywhere (docs/security.md).
 *
 * <p>A name is 1 to {@link #MAX_LENGTH} characters of {@code A-Z a-z 0-9 . _ -}, and does not start with
 * {@code .} or {@code -}: so it is never {@code .} or {@code ..}, never holds a path separator, a URI delimiter
 * ({@code ? # & % :}), a Redis Cluster hash tag ({@code { }}), whitespace or a control character, and never reads
 * as a command-line option. Account names may also hold {@code @} (e-mail addresses); they never reach a path.
 *
 * <p>KVCM accepts any string; its connectors use names such as {@code instance1}, {@code tp0}, {@code tp_3},
 * {@code nfs_01}, {@code default}, which all pass. An id with {@code /} (a model path used as an instance id) is
 * refused: in KVCM it silently nests one instance's files inside another's directory.
 */
public final class Identifiers {
    public static final int MAX_LENGTH = 128;

    /** What a name names, with the field that carries it in error messages. */
    public enum Kind {
        INSTANCE("instance id"),
        GROUP("instance group name"),
        QUOTA_GROUP("quota group name"),
        STORAGE("storage name"),
        SPEC("location spec name"),
        SPEC_GROUP("location spec group name"),
        ACCOUNT("account name"),
        AGENT("agent id"),
        /** A what-if trace (an uploaded one is stored under its name) and a what-if job id. */
        TRACE("trace name"),
        JOB("job id");

        public final String what;

        Kind(String what) {
            this.what = what;
        }
    }

    private Identifiers() {
    }

    /** Null when {@code value} is a valid name of that kind, else why not (without the field name). */
    public static String problem(Kind kind, String value) {
        if (value == null || value.isEmpty()) {
            return "must not be empty";
        }
        if (value.length() > MAX_LENGTH) {
            return "must be at most " + MAX_LENGTH + " characters, got " + value.length();
        }
        char first = value.charAt(0);
        if (first == '.' || first == '-') {
            return "must not start with '" + first + "'";
        }
        for (int i = 0; i < value.length(); i++) {
            char c = value.charAt(i);
            if (!allowed(kind, c)) {
                return "must hold only letters, digits, '.', '_' and '-'" + (kind == Kind.ACCOUNT ? " and '@'" : "")
                        + "; character " + i + " is " + Text.describe(c);
            }
        }
        return null;
    }

    private static boolean allowed(Kind kind, char c) {
        return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
                || c == '.' || c == '@' && kind == Kind.ACCOUNT;
    }

    public static boolean valid(Kind kind, String value) {
        return problem(kind, value) == null;
    }

    /**
     * Returns {@code value} when valid, else throws {@link InvalidIdentifierException} whose message names the
     * field: {@code instance_id: must not start with '.'} (the value itself is left out when it is unprintable).
     */
    public static String require(Kind kind, String field, String value) {
        String p = problem(kind, value);
        if (p != null) {
            throw new InvalidIdentifierException(field, p);
        }
        return value;
    }

    /** A name that breaks the rules, with the field it came in. */
    public static final class InvalidIdentifierException extends IllegalArgumentException {
        public final String field;

        public InvalidIdentifierException(String field, String problem) {
            super(field + ": " + problem);
            this.field = field;
        }
    }
}
