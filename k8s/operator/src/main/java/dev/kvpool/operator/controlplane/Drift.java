package dev.kvpool.operator.controlplane;

import com.fasterxml.jackson.databind.JsonNode;
import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Compares the object a resource asks for with the control plane's copy and names every difference. Pure.
 *
 * <p>Only the top-level fields the operator writes count (the control plane adds version, timestamps, usage, ...).
 * Below the top level both sides count, so a key added in the console is drift, except that a missing key equals an
 * empty value (0, "", false, [], {}, null): the control plane prints free-form storage specs through protobuf, which
 * fills defaults. Numbers compare by value (protobuf prints int64 as strings), and keys of free-form objects compare
 * without case and underscores ({@code rootPath} = {@code root_path}).
 */
public final class Drift {
    /** At most this many differences are named (they go into an Event). */
    static final int MAX_CHANGES = 20;
    static final int MAX_VALUE = 120;

    private Drift() {
    }

    /** The differences, each as {@code field: control plane has X, spec wants Y}; empty when equal. */
    public static List<String> changes(JsonNode desired, JsonNode actual) {
        List<String> out = new ArrayList<>();
        for (Iterator<Map.Entry<String, JsonNode>> it = desired.fields(); it.hasNext(); ) {
            var e = it.next();
            compare(e.getKey(), e.getValue(), actual.path(e.getKey()), out);
        }
        return out.size() > MAX_CHANGES ? List.copyOf(out.subList(0, MAX_CHANGES)) : out;
    }

    private static void compare(String path, JsonNode want, JsonNode have, List<String> out) {
        if (isEmpty(want) && isEmpty(have)) {
            return;
        }
        if (want.isObject() && have.isObject()) {
            Map<String, Map.Entry<String, JsonNode>> w = normalized(want);
            Map<String, Map.Entry<String, JsonNode>> h = normalized(have);
            for (var e : w.entrySet()) {
                var other = h.get(e.getKey());
                compare(path + "." + e.getValue().getKey(), e.getValue().getValue(), other == null
                        ? com.fasterxml.jackson.databind.node.MissingNode.getInstance() : other.getValue(), out);
            }
            for (var e : h.entrySet()) {
                if (!w.containsKey(e.getKey()) && !isEmpty(e.getValue().getValue())) {
                    out.add(path + "." + e.getValue().getKey() + ": control plane has " + show(e.getValue().getValue())
                            + ", spec does not set it");
                }
            }
            return;
        }
        if (!scalarEqual(want, have)) {
            out.add(path + ": control plane has " + show(have) + ", spec wants " + show(want));
        }
    }

    /** Fields of one object by their key without case and underscores (messages keep the original spelling). */
    private static Map<String, Map.Entry<String, JsonNode>> normalized(JsonNode o) {
        Map<String, Map.Entry<String, JsonNode>> m = new LinkedHashMap<>();
        o.fields().forEachRemaining(e -> m.put(e.getKey().replace("_", "").toLowerCase(Locale.ROOT), e));
        return m;
    }

    static boolean isEmpty(JsonNode n) {
        if (n == null || n.isMissingNode() || n.isNull()) {
            return true;
        }
        if (n.isContainerNode()) {
            return n.isEmpty();
        }
        if (n.isNumber()) {
            return n.decimalValue().signum() == 0;
        }
        if (n.isBoolean()) {
            return !n.booleanValue();
        }
        return n.isTextual() && n.textValue().isEmpty();
    }

    private static boolean scalarEqual(JsonNode a, JsonNode b) {
        if (isEmpty(a) && isEmpty(b)) {
            return true;
        }
        BigDecimal x = number(a);
        BigDecimal y = number(b);
        if (x != null && y != null) {
            return x.compareTo(y) == 0;
        }
        if (a.isArray() && b.isArray()) {
            if (a.size() != b.size()) {
                return false;
            }
            for (int i = 0; i < a.size(); i++) {
                List<String> sub = new ArrayList<>();
                compare("", a.get(i), b.get(i), sub);
                if (!sub.isEmpty()) {
                    return false;
                }
            }
            return true;
        }
        return a.equals(b);
    }

    private static BigDecimal number(JsonNode n) {
        if (n.isNumber()) {
            return n.decimalValue();
        }
        if (n.isTextual() && n.textValue().matches("-?\\d{1,30}(\\.\\d{1,30})?")) {
            return new BigDecimal(n.textValue());
        }
        return null;
    }

    private static String show(JsonNode n) {
        String s = n == null || n.isMissingNode() ? "nothing" : n.toString();
        return s.length() > MAX_VALUE ? s.substring(0, MAX_VALUE) + "…" : s;
    }
}
