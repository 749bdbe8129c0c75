package dev.kvpool.api.json;

import com.fasterxml.jackson.annotation.JsonSetter;
import com.fasterxml.jackson.annotation.Nulls;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.StreamReadConstraints;
import com.fasterxml.jackson.core.exc.StreamConstraintsException;
import com.fasterxml.jackson.core.exc.StreamReadException;
import com.fasterxml.jackson.databind.DeserializationContext;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JavaType;
import com.fasterxml.jackson.databind.JsonMappingException;
import com.fasterxml.jackson.databind.cfg.CoercionAction;
import com.fasterxml.jackson.databind.cfg.CoercionInputShape;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.deser.DeserializationProblemHandler;
import com.fasterxml.jackson.databind.deser.ValueInstantiator;
import com.fasterxml.jackson.databind.exc.InvalidDefinitionException;
import com.fasterxml.jackson.databind.exc.InvalidFormatException;
import com.fasterxml.jackson.databind.exc.InvalidNullException;
import com.fasterxml.jackson.databind.exc.MismatchedInputException;
import com.fasterxml.jackson.databind.exc.UnrecognizedPropertyException;
import com.fasterxml.jackson.databind.type.LogicalType;
import java.io.IOException;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.util.Arrays;
import java.util.Collection;
import java.util.Map;
import java.util.TreeSet;

/**
 * What was wrong with a JSON request body, in words a client can act on ({@code keys[2]: expected an integer, got
 * 1.5}), for the REST services' error mappers. Jackson's own messages name Java types and coercion configs, and
 * Quarkus answers some of these failures with an empty 400 or a 500; every service maps them through here.
 */
public final class BodyErrors {
    private BodyErrors() {
    }

    /** The field at fault ({@code null}: the body as a whole) and what was wrong with it. */
    public record Fault(String field, String detail) {
        /** {@code field: detail}, or the detail alone for the whole body. */
        public String message() {
            return field == null ? detail : field + ": " + detail;
        }
    }

    /**
     * Makes request bodies strict where Jackson's defaults silently change what the client sent: 1.5 is not read
     * as the integer 1, a null is not read as 0 or false, and (when asked) an unknown field is an error rather
     * than ignored, so a misspelt option cannot pass for its default. A value of one kind is never taken for another:
     * 42 or true is not the name "42", "42" is not the number 42 (KVCM's proto JSON, which writes 64-bit integers as
     * strings, is read by {@link ProtoJson}, not here). Duplicate keys and nesting deeper than
     * {@link ProtoJson#MAX_NESTING} are refused.
     */
    public static ObjectMapper strict(ObjectMapper mapper, boolean rejectUnknownFields) {
        mapper.disable(DeserializationFeature.ACCEPT_FLOAT_AS_INT);
        mapper.enable(DeserializationFeature.FAIL_ON_NUMBERS_FOR_ENUMS);
        mapper.enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS);
        mapper.configure(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES, rejectUnknownFields);
        // a null inside a key or offset array would read as 0 (FAIL_ON_NULL_FOR_PRIMITIVES would also refuse an
        // absent primitive field, which callers may leave out)
        for (Class<?> c : new Class<?>[] {long[].class, int[].class, short[].class, double[].class, float[].class,
                boolean[].class}) {
            mapper.configOverride(c).setSetterInfo(JsonSetter.Value.forContentNulls(Nulls.FAIL));
        }
        // a key given twice is refused rather than last-one-wins; deep nesting is refused while parsing (400)
        mapper.getFactory().enable(JsonParser.Feature.STRICT_DUPLICATE_DETECTION);
        mapper.getFactory().setStreamReadConstraints(StreamReadConstraints.builder()
                .maxNestingDepth(ProtoJson.MAX_NESTING).build());
        // a number or a boolean where a string belongs is refused, not turned into the name "42" or "true"; a
        // string where a number or a boolean belongs, and a number where a boolean belongs, are refused too
        for (CoercionInputShape from : new CoercionInputShape[] {CoercionInputShape.Integer, CoercionInputShape.Float,
                CoercionInputShape.Boolean}) {
            mapper.coercionConfigFor(LogicalType.Textual).setCoercion(from, CoercionAction.Fail);
        }
        for (LogicalType to : new LogicalType[] {LogicalType.Integer, LogicalType.Float, LogicalType.Boolean}) {
            mapper.coercionConfigFor(to).setCoercion(CoercionInputShape.String, CoercionAction.Fail);
        }
        mapper.coercionConfigFor(LogicalType.Boolean).setCoercion(CoercionInputShape.Integer, CoercionAction.Fail);
        mapper.addHandler(new Wording());
        return mapper;
    }

    /** Words a type mismatch while the parser still stands on the offending value (it is closed by the time a mapper sees it). */
    private static final class Wording extends DeserializationProblemHandler {
        @Override
        public Object handleUnexpectedToken(DeserializationContext ctxt, JavaType targetType, JsonToken t,
                                            JsonParser p, String failureMsg) throws IOException {
            throw new Mismatch(p, targetType, t);
        }

        @Override
        public Object handleMissingInstantiator(DeserializationContext ctxt, Class<?> instClass,
                                                ValueInstantiator valueInsta, JsonParser p, String msg)
                throws IOException {
            JsonToken t = p.currentToken();
            if (t == JsonToken.START_OBJECT || t == JsonToken.FIELD_NAME) {
                return NOT_HANDLED; // the right shape and still no way to build it: the server's bug, not the body
            }
            throw new Mismatch(p, ctxt.constructType(instClass), t);
        }
    }

    /** A value of the wrong kind, worded as {@code expected an integer, got 1.5}. */
    private static final class Mismatch extends MismatchedInputException {
        Mismatch(JsonParser p, JavaType target, JsonToken t) {
            super(p, "expected " + describe(target.getRawClass()) + ", got " + token(p, t), target);
        }
    }

    /**
     * The client's fault behind {@code e} or one of its causes (Quarkus wraps parse errors in a
     * WebApplicationException), or {@code null} when it is not a fault in a request body — an
     * InvalidDefinitionException raised while writing a response is the server's bug and stays a 500.
     */
    public static Fault of(Throwable e) {
        for (Throwable t = e; t != null; t = t.getCause() == t ? null : t.getCause()) {
            if (t instanceof StreamConstraintsException c) {
                return new Fault(null, "body refused: " + firstLine(c.getOriginalMessage()));
            }
            if (t instanceof JsonMappingException m && !(m.getCause() instanceof StreamReadException)
                    && !(m.getCause() instanceof StreamConstraintsException)) {
                if (m instanceof InvalidDefinitionException && !(m.getProcessor() instanceof JsonParser)) {
                    return null;
                }
                return mapping(m);
            }
            if (t instanceof StreamReadException p) {
                return new Fault(null, "malformed JSON" + where(p) + ": " + firstLine(p.getOriginalMessage()));
            }
        }
        return null;
    }

    /**
     * What an error mapper for body failures answers: {@code fault} when the client's body was at fault, else
     * {@code other} (the service's own response for its WebApplicationExceptions, or a 500 for a server bug).
     */
    public static <R> R answer(Throwable e, java.util.function.Function<Fault, R> fault,
                               java.util.function.Function<Throwable, R> other) {
        Fault f = of(e);
        return f != null ? fault.apply(f) : other.apply(e);
    }

    private static Fault mapping(JsonMappingException e) {
        String field = path(e);
        if (e instanceof UnrecognizedPropertyException u) {
            TreeSet<String> known = new TreeSet<>();
            if (u.getKnownPropertyIds() != null) {
                u.getKnownPropertyIds().forEach(k -> known.add(String.valueOf(k)));
            }
            return new Fault(field, "unknown field" + (known.isEmpty() ? "" : "; known fields: " + String.join(", ", known)));
        }
        if (e instanceof Mismatch) {
            return new Fault(field, e.getOriginalMessage());
        }
        if (e instanceof InvalidNullException) {
            return new Fault(field, "must not be null");
        }
        Class<?> target = e instanceof MismatchedInputException mi ? mi.getTargetType()
                : e instanceof InvalidDefinitionException d && d.getType() != null ? d.getType().getRawClass() : null;
        String got = e instanceof InvalidFormatException f ? value(f.getValue()) : coerced(e.getOriginalMessage());
        if (target == null) {
            return new Fault(field, firstLine(e.getOriginalMessage()));
        }
        if (target.isArray() && field != null && field.endsWith("]")) {
            target = target.getComponentType(); // a primitive array's element: Jackson names the array
        }
        String expected = describe(target);
        if (expected.equals("an object") && (got == null || got.equals("an object"))) {
            // a problem inside an object of the right shape (a missing creator property, say): Jackson's words
            return new Fault(field, firstLine(e.getOriginalMessage()));
        }
        return new Fault(field, "expected " + expected + (got == null ? "" : ", got " + got));
    }

    private static final java.util.regex.Pattern COERCION = java.util.regex.Pattern.compile(
            "^Cannot coerce (String|Integer|Floating-point|Boolean) value \\((.*?)\\) to ");

    /** What a refused coercion was given, from Jackson's words (the value is not kept in the exception). */
    private static String coerced(String message) {
        var m = message == null ? null : COERCION.matcher(message);
        if (m == null || !m.find()) {
            return null;
        }
        String v = m.group(2);
        return m.group(1).equals("String") && v.length() >= 2 && v.startsWith("\"") && v.endsWith("\"")
                ? value(v.substring(1, v.length() - 1)) : v;
    }

    /** {@code a.b[2].c}, or null for the body itself. */
    private static String path(JsonMappingException e) {
        StringBuilder sb = new StringBuilder();
        for (JsonMappingException.Reference r : e.getPath()) {
            if (r.getFieldName() != null) {
                if (!sb.isEmpty()) {
                    sb.append('.');
                }
                sb.append(r.getFieldName());
            } else if (r.getIndex() >= 0) {
                sb.append('[').append(r.getIndex()).append(']');
            }
        }
        return sb.isEmpty() ? null : sb.toString();
    }

    static String describe(Class<?> c) {
        if (c == long.class || c == Long.class || c == int.class || c == Integer.class || c == short.class
                || c == Short.class || c == byte.class || c == Byte.class || c == BigInteger.class) {
            return "an integer";
        }
        if (c == double.class || c == Double.class || c == float.class || c == Float.class || c == BigDecimal.class) {
            return "a number";
        }
        if (c == boolean.class || c == Boolean.class) {
            return "true or false";
        }
        if (CharSequence.class.isAssignableFrom(c) || c == char.class || c == Character.class) {
            return "a string";
        }
        if (c.isEnum()) {
            return "one of " + Arrays.toString(c.getEnumConstants());
        }
        if (c.isArray()) {
            Class<?> e = c.getComponentType();
            String of = describe(e);
            return e.isPrimitive() || e == Long.class || e == Integer.class || e == String.class
                    ? "an array of " + plural(of) : "an array";
        }
        if (Collection.class.isAssignableFrom(c)) {
            return "an array";
        }
        if (Map.class.isAssignableFrom(c)) {
            return "an object";
        }
        return "an object";
    }

    private static String plural(String one) {
        return switch (one) {
            case "an integer" -> "integers";
            case "a number" -> "numbers";
            case "a string" -> "strings";
            case "true or false" -> "booleans";
            default -> "values";
        };
    }

    private static String token(JsonParser p, JsonToken t) {
        if (t == null) {
            return "the end of the body";
        }
        try {
            return switch (t) {
                case START_ARRAY, END_ARRAY -> "an array";
                case START_OBJECT, END_OBJECT, FIELD_NAME -> "an object";
                case VALUE_STRING -> value(p.getText());
                case VALUE_NUMBER_INT, VALUE_NUMBER_FLOAT -> p.getText();
                case VALUE_TRUE -> "true";
                case VALUE_FALSE -> "false";
                case VALUE_NULL -> "null";
                default -> null;
            };
        } catch (IOException e) {
            return null;
        }
    }

    private static String value(Object v) {
        if (v instanceof String s) {
            return "the string \"" + (s.length() > 40 ? s.substring(0, 40) + "…" : s) + "\"";
        }
        return String.valueOf(v);
    }

    private static String where(StreamReadException p) {
        var loc = p.getLocation();
        return loc == null || loc.getLineNr() < 0 ? "" : " at line " + loc.getLineNr() + ", column " + loc.getColumnNr();
    }

    private static String firstLine(String s) {
        if (s == null) {
            return "unreadable body";
        }
        int nl = s.indexOf('\n');
        // Jackson names the source it hides ("[Source: REDACTED (...); line: 1, column: 9]"): keep the position
        return (nl < 0 ? s : s.substring(0, nl)).replaceAll("\\[Source: [^;\\]]*; ", "[");
    }
}
