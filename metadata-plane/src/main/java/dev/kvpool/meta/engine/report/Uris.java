package dev.kvpool.meta.engine.report;


/**
 * Reported URIs and the {@code s_version} parameter KVCM appends to them (kvcm-engine-events.md §4.5): one extra
 * query parameter, '?' when the URI has no query yet, else '&'.
 */
public final class Uris {
    public static final int MAX_LENGTH = 4096;
    static final String PARAM = "s_version";

    private Uris() {
    }

    /** Null when a client URI may be stored, else what is wrong with it. */
    public static String problem(String uri) {
        if (uri.isEmpty()) {
            return "uri is empty";
        }
        if (uri.length() > MAX_LENGTH) {
            return "uri is longer than " + MAX_LENGTH + " characters";
        }
        for (int i = 0; i < uri.length(); i++) {
            char c = uri.charAt(i);
            if (c <= ' ' || c == 0x7f) {
                return "uri contains a space or control character";
            }
        }
        // a scheme, then anything printable: RTP-LLM's "event_report://" has an '_' that RFC 3986 (and java.net.URI)
        // do not allow in a scheme, so the check is KVCM's looser one
        int colon = uri.indexOf(':');
        if (colon <= 0 || !Character.isLetter(uri.charAt(0))) {
            return "uri has no scheme";
        }
        for (int i = 1; i < colon; i++) {
            char c = uri.charAt(i);
            if (!(Character.isLetterOrDigit(c) || c == '+' || c == '-' || c == '.' || c == '_') || c > 0x7e) {
                return "uri has an invalid scheme";
            }
        }
        if (colon == uri.length() - 1) {
            return "uri has nothing after its scheme";
        }
        if (versionCount(uri) > 0) {
            return "uri already carries s_version (the server appends it)";
        }
        return null;
    }

    /** The URI with {@code s_version=<token>} appended (before any fragment). */
    public static String withVersion(String uri, String token) {
        int hash = uri.indexOf('#');
        String base = hash < 0 ? uri : uri.substring(0, hash);
        String frag = hash < 0 ? "" : uri.substring(hash);
        return base + (base.indexOf('?') < 0 ? '?' : '&') + PARAM + "=" + token + frag;
    }

    /** Stored-URI check for visibility: the token it carries, "" for none (legacy), or null when malformed. */
    public static String versionOf(String uri) {
        if (uri == null || uri.isEmpty() || uri.length() > MAX_LENGTH + 64) {
            return null;
        }
        int q = uri.indexOf('?');
        if (q < 0) {
            return "";
        }
        int hash = uri.indexOf('#', q);
        String query = hash < 0 ? uri.substring(q + 1) : uri.substring(q + 1, hash);
        String found = "";
        int count = 0;
        for (String p : query.split("&", -1)) {
            if (p.startsWith(PARAM + "=") || p.equals(PARAM)) {
                count++;
                found = p.length() > PARAM.length() ? p.substring(PARAM.length() + 1) : "";
            }
        }
        if (count == 0) {
            return "";
        }
        return count == 1 && Generations.valid(found) ? found : null;
    }

    private static int versionCount(String uri) {
        int q = uri.indexOf('?');
        if (q < 0) {
            return 0;
        }
        int count = 0;
        for (String p : uri.substring(q + 1).split("[&#]", -1)) {
            if (p.startsWith(PARAM + "=") || p.equals(PARAM)) {
                count++;
            }
        }
        return count;
    }
}
