package dev.kvpool.meta.engine.report;

/**
 * ReportEvent block keys (kvcm-engine-events.md §4.1): decimal text, signed int64 or unsigned uint64, normalised to
 * one 64-bit pattern ("18446744073709551615" and "-1" are the same key). No '+', no whitespace, nothing but digits
 * after an optional '-'. Leading zeros are allowed ("01" = "1"), bounded so that a hostile key cannot be long.
 */
public final class BlockKeys {
    /** "-" + 20 digits is the longest real key; leading zeros get some room beyond. */
    static final int MAX_LENGTH = 40;

    private BlockKeys() {
    }

    /** The key's 64-bit pattern; throws IllegalArgumentException naming the problem. */
    public static long parse(String s) {
        if (s == null || s.isEmpty()) {
            throw new IllegalArgumentException("block_key is empty");
        }
        if (s.length() > MAX_LENGTH) {
            throw new IllegalArgumentException("block_key is longer than " + MAX_LENGTH + " characters");
        }
        boolean negative = s.charAt(0) == '-';
        int from = negative ? 1 : 0;
        if (from == s.length()) {
            throw new IllegalArgumentException("block_key '-' has no digits");
        }
        for (int i = from; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c < '0' || c > '9') {
                throw new IllegalArgumentException("block_key must be decimal digits with an optional '-'");
            }
        }
        try {
            return negative ? Long.parseLong(s) : Long.parseUnsignedLong(s);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("block_key is out of the 64-bit range");
        }
    }
}
