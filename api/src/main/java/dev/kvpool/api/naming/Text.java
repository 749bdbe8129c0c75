package dev.kvpool.api.naming;

/**
 * Client text on its way into a response header or a log line. Netty refuses a header value with a control
 * character (the response is then never sent: the client hangs), and a newline in a log line forges the next
 * entry; so anything a client sent is escaped before it goes to either.
 */
public final class Text {
    private Text() {
    }

    /** The most characters of client text a header or a log line carries. */
    public static final int MAX_ECHO = 300;

    /**
     * Printable ASCII only, anything else as {@code \\uXXXX} (a backslash as {@code \\\\}), cut to
     * {@link #MAX_ECHO}: safe for an HTTP header value and for one log line.
     */
    public static String safe(String s) {
        if (s == null) {
            return "";
        }
        StringBuilder b = null;
        int n = Math.min(s.length(), MAX_ECHO);
        for (int i = 0; i < n; i++) {
            char c = s.charAt(i);
            boolean plain = c >= 0x20 && c < 0x7f && c != '\\';
            if (!plain && b == null) {
                b = new StringBuilder(n + 16).append(s, 0, i);
            }
            if (b != null) {
                if (plain) {
                    b.append(c);
                } else if (c == '\\') {
                    b.append("\\\\");
                } else {
                    b.append(String.format("\\u%04x", (int) c));
                }
            }
        }
        String out = b == null ? s.substring(0, n) : b.toString();
        return s.length() > n ? out + "..." : out;
    }

    /** {@code 'a'}, or {@code U+0000} for an unprintable or non-ASCII character. */
    public static String describe(char c) {
        return c >= 0x21 && c < 0x7f ? "'" + c + "'" : String.format("U+%04X", (int) c);
    }

    /**
     * Null when {@code value} is acceptable opaque client text (a trace id, a model name): at most {@code max}
     * characters and no control character. Else why not.
     */
    public static String opaqueProblem(String value, int max) {
        if (value == null) {
            return null;
        }
        if (value.length() > max) {
            return "must be at most " + max + " characters, got " + value.length();
        }
        for (int i = 0; i < value.length(); i++) {
            char c = value.charAt(i);
            if (c < 0x20 || c == 0x7f) {
                return "must not hold control characters; character " + i + " is " + describe(c);
            }
        }
        return null;
    }
}
