package dev.kvpool.testing.hostile;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Random;

/**
 * Malformed and hostile variants of a valid JSON request body, for the hostile-input suites of every service: the
 * body broken as a whole (empty, truncated, not JSON, invalid UTF-8, trailing data, deep nesting), a key given
 * twice, and every field at every depth replaced by each hostile value ({@link #HOSTILE_VALUES}: wrong kinds, huge
 * and negative numbers, NUL and control characters, path segments, long strings). Deterministic for a seed, so a
 * failure names a case that can be replayed.
 */
public final class HostileJson {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final JsonNodeFactory F = JsonNodeFactory.instance;

    private HostileJson() {
    }

    /** One variant: what was done, and the bytes to send. */
    public record Case(String label, byte[] body) {
        public String text() {
            return new String(body, StandardCharsets.UTF_8);
        }

        @Override
        public String toString() {
            return label;
        }
    }

    /** Values put in place of each field, labelled. Strings aim at names (path, URI, header, log line). */
    public static final Map<String, JsonNode> HOSTILE_VALUES = hostileValues();

    private static Map<String, JsonNode> hostileValues() {
        Map<String, JsonNode> m = new java.util.LinkedHashMap<>();
        m.put("null", F.nullNode());
        m.put("true", F.booleanNode(true));
        m.put("0", F.numberNode(0));
        m.put("-1", F.numberNode(-1));
        m.put("1.5", F.numberNode(1.5));
        m.put("Long.MAX_VALUE", F.numberNode(Long.MAX_VALUE));
        m.put("Long.MIN_VALUE", F.numberNode(Long.MIN_VALUE));
        m.put("2^64", F.numberNode(BigInteger.ONE.shiftLeft(64)));
        m.put("1e400", F.numberNode(new BigDecimal("1e400")));
        m.put("-1e400", F.numberNode(new BigDecimal("-1e400")));
        m.put("empty string", F.textNode(""));
        m.put("string 'x'", F.textNode("x"));
        m.put("number in a string", F.textNode("42"));
        m.put("huge number in a string", F.textNode("99999999999999999999999"));
        m.put("NUL", F.textNode("a\u0000b"));
        m.put("control characters", F.textNode("a\r\nX-Injected: 1\u0001\u001b[31m"));
        m.put("'..'", F.textNode(".."));
        m.put("'.'", F.textNode("."));
        m.put("path traversal", F.textNode("../../../../etc/passwd"));
        m.put("slash", F.textNode("a/b"));
        m.put("backslash", F.textNode("a\\..\\b"));
        m.put("percent-encoded dots", F.textNode("%2e%2e%2f"));
        m.put("URI delimiters", F.textNode("a?b=c&d#e"));
        m.put("hash tag braces", F.textNode("{x}"));
        m.put("unicode", F.textNode("ä\u202e\uFEFF"));
        m.put("lone surrogate", F.textNode("\uD800"));
        m.put("long string (10k)", F.textNode("a".repeat(10_000)));
        m.put("empty array", F.arrayNode());
        m.put("mixed array", F.arrayNode().add(1).add("a").addNull().add(F.objectNode()));
        m.put("empty object", F.objectNode());
        return java.util.Collections.unmodifiableMap(m);
    }

    /** The body as a whole broken, whatever its shape. */
    public static List<Case> broken(String valid) {
        List<Case> out = new ArrayList<>();
        byte[] v = valid.getBytes(StandardCharsets.UTF_8);
        out.add(new Case("empty body", new byte[0]));
        out.add(new Case("whitespace only", bytes("  \n ")));
        out.add(new Case("JSON null", bytes("null")));
        out.add(new Case("JSON array", bytes("[" + valid + "]")));
        out.add(new Case("JSON string", bytes("\"x\"")));
        out.add(new Case("JSON number", bytes("42")));
        out.add(new Case("not JSON", bytes("garbage<>;")));
        out.add(new Case("invalid UTF-8", new byte[] {'{', '"', (byte) 0xff, (byte) 0xfe, '"', ':', '1', '}'}));
        out.add(new Case("NUL bytes", new byte[] {'{', 0, 0, '}'}));
        out.add(new Case("trailing data", bytes(valid + " {}")));
        out.add(new Case("single quotes", bytes(valid.replace('"', '\''))));
        out.add(new Case("comment", bytes("/* x */" + valid)));
        for (int cut : new int[] {1, v.length / 4, v.length / 2, v.length - 1}) {
            if (cut > 0 && cut < v.length) {
                out.add(new Case("truncated at byte " + cut, java.util.Arrays.copyOf(v, cut)));
            }
        }
        out.add(new Case("nested 1000 deep at the root", bytes(nest(1000, "{\"a\":", "}", "1"))));
        out.add(new Case("arrays nested 100,000 deep", bytes("{\"x\":" + "[".repeat(100_000) + "]".repeat(100_000) + "}")));
        return out;
    }

    /**
     * Every field of {@code valid} (an object) at every depth replaced by each hostile value, plus each field given
     * twice and each field's value nested 1000 deep.
     */
    public static List<Case> fields(String valid) {
        JsonNode root = parse(valid);
        List<Case> out = new ArrayList<>();
        for (String path : paths(root, "")) {
            for (Map.Entry<String, JsonNode> h : HOSTILE_VALUES.entrySet()) {
                out.add(new Case(path + " = " + h.getKey(), bytes(replace(root, path, h.getValue()).toString())));
            }
            out.add(new Case(path + " nested 1000 deep", bytes(replaceRaw(root, path, nest(1000, "[", "]", "1")))));
        }
        Iterator<String> names = root.fieldNames();
        while (names.hasNext()) {
            String n = names.next();
            String dup = root.toString().replaceFirst("^\\{", "{" + quote(n) + ":" + root.get(n) + ",");
            out.add(new Case(n + " given twice", bytes(dup)));
        }
        return out;
    }

    /** {@code count} random byte-level mutations (flips, deletions, insertions of JSON punctuation). */
    public static List<Case> fuzz(String valid, long seed, int count) {
        Random r = new Random(seed);
        byte[] v = bytes(valid);
        byte[] punct = bytes("{}[]\",:\\0-e.\u0000");
        List<Case> out = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            byte[] b = v.clone();
            int edits = 1 + r.nextInt(4);
            StringBuilder label = new StringBuilder("fuzz seed " + seed + " #" + i + ":");
            for (int e = 0; e < edits && b.length > 0; e++) {
                int at = r.nextInt(b.length);
                switch (r.nextInt(3)) {
                    case 0 -> {
                        b[at] = punct[r.nextInt(punct.length)];
                        label.append(" set@").append(at);
                    }
                    case 1 -> {
                        b = concat(java.util.Arrays.copyOf(b, at), java.util.Arrays.copyOfRange(b, at + 1, b.length));
                        label.append(" del@").append(at);
                    }
                    default -> {
                        b = concat(java.util.Arrays.copyOf(b, at), new byte[] {punct[r.nextInt(punct.length)]},
                                java.util.Arrays.copyOfRange(b, at, b.length));
                        label.append(" ins@").append(at);
                    }
                }
            }
            out.add(new Case(label.toString(), b));
        }
        return out;
    }

    /** An array field of {@code n} small integers, for oversized-count checks: {@code {"<field>":[0,0,...]}} merged into valid. */
    public static Case withArray(String valid, String field, int n) {
        StringBuilder sb = new StringBuilder(n * 2 + 2).append('[');
        for (int i = 0; i < n; i++) {
            sb.append(i == 0 ? "0" : ",0");
        }
        return new Case(field + " with " + n + " elements", bytes(replaceRaw(parse(valid), field, sb.append(']').toString())));
    }

    // ---- helpers -------------------------------------------------------------------------------------------

    private static JsonNode parse(String s) {
        try {
            return JSON.readTree(s);
        } catch (java.io.IOException e) {
            throw new IllegalArgumentException("not valid JSON: " + s, e);
        }
    }

    /** Dotted paths of every member at every depth (array elements as [i]). */
    static List<String> paths(JsonNode n, String prefix) {
        List<String> out = new ArrayList<>();
        if (n.isObject()) {
            n.fieldNames().forEachRemaining(k -> {
                String p = prefix.isEmpty() ? k : prefix + "." + k;
                out.add(p);
                out.addAll(paths(n.get(k), p));
            });
        } else if (n.isArray()) {
            for (int i = 0; i < Math.min(n.size(), 2); i++) { // the first two elements stand for the rest
                String p = prefix + "[" + i + "]";
                out.add(p);
                out.addAll(paths(n.get(i), p));
            }
        }
        return out;
    }

    private static JsonNode replace(JsonNode root, String path, JsonNode value) {
        JsonNode copy = root.deepCopy();
        List<Object> steps = steps(path);
        JsonNode parent = copy;
        for (int i = 0; i < steps.size() - 1; i++) {
            Object s = steps.get(i);
            parent = s instanceof Integer ix ? parent.get(ix) : parent.get((String) s);
        }
        Object last = steps.get(steps.size() - 1);
        if (last instanceof Integer ix) {
            ((ArrayNode) parent).set(ix, value);
        } else {
            ((ObjectNode) parent).set((String) last, value);
        }
        return copy;
    }

    /** Replaces a member by raw JSON text (too deep for a tree): a unique marker string is substituted. */
    private static String replaceRaw(JsonNode root, String path, String raw) {
        String marker = "\u0001hostile-marker\u0001";
        String s = replace(root, path, F.textNode(marker)).toString();
        return s.replace(quote(marker), raw);
    }

    private static List<Object> steps(String path) {
        List<Object> out = new ArrayList<>();
        for (String part : path.split("\\.")) {
            int b = part.indexOf('[');
            String name = b < 0 ? part : part.substring(0, b);
            if (!name.isEmpty()) {
                out.add(name);
            }
            while (b >= 0) {
                int e = part.indexOf(']', b);
                out.add(Integer.parseInt(part.substring(b + 1, e)));
                b = part.indexOf('[', e);
            }
        }
        return out;
    }

    private static String quote(String s) {
        return F.textNode(s).toString();
    }

    private static String nest(int depth, String open, String close, String inner) {
        return open.repeat(depth) + inner + close.repeat(depth);
    }

    private static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    private static byte[] concat(byte[]... parts) {
        return RawHttp.concat(parts);
    }
}
