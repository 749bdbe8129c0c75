package dev.kvpool.control.common;

/** ETag = the object's version, quoted. {@code If-Match} must name the current version. */
public final class Etags {
    private Etags() {
    }

    public static String of(long version) {
        return "\"" + version + "\"";
    }

    /** Checks {@code If-Match}; {@code required} makes a missing header a 428. */
    public static void check(String ifMatch, long current, boolean required) {
        if (ifMatch == null || ifMatch.isBlank()) {
            if (required) {
                throw ApiException.preconditionRequired();
            }
            return;
        }
        String v = ifMatch.trim();
        if (v.equals("*")) {
            return;
        }
        if (v.startsWith("W/")) {
            v = v.substring(2);
        }
        v = v.replace("\"", "");
        if (!v.equals(Long.toString(current))) {
            throw ApiException.preconditionFailed("the resource changed: If-Match " + ifMatch.trim()
                    + " but the current ETag is " + of(current) + "; GET it again and retry");
        }
    }
}
