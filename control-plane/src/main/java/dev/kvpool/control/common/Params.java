package dev.kvpool.control.common;

import dev.kvpool.api.naming.Text;

/**
 * Query parameters parsed by hand: JAX-RS turns a value it cannot convert into a bare 404 (for an int) or silently
 * into {@code false} (for a Boolean); these answer 400 naming the parameter.
 */
public final class Params {
    private Params() {
    }

    public static int integer(String name, String value, int dflt, int min, int max) {
        if (value == null) {
            return dflt;
        }
        long v;
        try {
            v = Long.parseLong(value.trim());
        } catch (NumberFormatException e) {
            throw ApiException.invalid(name, name + " must be an integer between " + min + " and " + max + ", got '"
                    + Text.safe(value) + "'");
        }
        if (v < min || v > max) {
            throw ApiException.invalid(name, name + " must be between " + min + " and " + max + ", got " + v);
        }
        return (int) v;
    }

    /** null when absent; {@code true} or {@code false} (any case); anything else is refused. */
    public static Boolean bool(String name, String value) {
        if (value == null) {
            return null;
        }
        return switch (value.trim().toLowerCase(java.util.Locale.ROOT)) {
            case "true" -> Boolean.TRUE;
            case "false" -> Boolean.FALSE;
            default -> throw ApiException.invalid(name, name + " must be true or false, got '" + Text.safe(value) + "'");
        };
    }
}
