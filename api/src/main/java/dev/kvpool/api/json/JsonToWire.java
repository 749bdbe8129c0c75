package dev.kvpool.api.json;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.exc.InputCoercionException;
import com.google.protobuf.Descriptors.FieldDescriptor.Type;
import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.Message;
import dev.kvpool.api.json.MessageSchema.FieldSchema;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.util.Base64;

/**
 * Reads one proto3 JSON object and transcodes it to protobuf binary, which the builder then merges in one call.
 * One instance per parse (it holds the path and output buffer); the shared state lives in {@link MessageSchema}.
 */
final class JsonToWire {

    private static final BigInteger UINT64_MAX = BigInteger.ONE.shiftLeft(64).subtract(BigInteger.ONE);
    private static final double FLOAT_LIMIT = Float.MAX_VALUE * (1.0 + 1e-6);

    private final JsonParser p;
    private final WireWriter out = new WireWriter();
    private final JsonPath path = new JsonPath();
    /** Set by {@link #readNumeric} when the value is an unknown enum name: the value is dropped (field absent). */
    private boolean dropped;

    private JsonToWire(JsonParser p) {
        this.p = p;
    }

    static void merge(JsonParser parser, Message.Builder builder) {
        JsonToWire reader = new JsonToWire(parser);
        try {
            reader.readRoot(MessageSchema.of(builder.getDescriptorForType()));
        } catch (JsonProcessingException e) {
            var loc = e.getLocation();
            String where = loc == null ? "" : " at line " + loc.getLineNr() + ", column " + loc.getColumnNr();
            throw new ProtoJsonException(reader.path.toString(), "malformed JSON: " + e.getOriginalMessage() + where, e);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        try {
            builder.mergeFrom(reader.out.buf, 0, reader.out.pos);
        } catch (InvalidProtocolBufferException e) {
            // only reachable past protobuf's nesting limit (100 levels)
            throw new ProtoJsonException("(root)", "cannot build the message: " + e.getMessage(), e);
        }
    }

    private void readRoot(MessageSchema schema) throws IOException {
        JsonToken t = p.nextToken();
        if (t == null) {
            throw error("expected a JSON object (got an empty body)");
        }
        if (schema.wrapperValue != null && t != JsonToken.VALUE_NULL) {
            readSingle(schema.wrapperValue, t);
        } else if (t == JsonToken.START_OBJECT) {
            readObject(schema);
        } else {
            throw expected("a JSON object", t);
        }
        JsonToken trailing = p.nextToken();
        if (trailing != null) {
            throw error("trailing data after the JSON value");
        }
    }

    /** Reads the members of an object whose START_OBJECT was just read. */
    private void readObject(MessageSchema schema) throws IOException {
        for (JsonToken t = p.nextToken(); t != JsonToken.END_OBJECT; t = p.nextToken()) {
            FieldSchema f = schema.lookup(p.currentName());
            JsonToken v = p.nextToken();
            if (f == null) {
                p.skipChildren(); // unknown field: ignored at any depth, whatever its value
                continue;
            }
            if (v == JsonToken.VALUE_NULL) {
                continue; // null = absent
            }
            path.push(f.name);
            if (f.map) {
                readMap(f, v);
            } else if (f.repeated) {
                readRepeated(f, v);
            } else {
                readSingle(f, v);
            }
            path.pop();
        }
    }

    /** Writes tag + value of one (singular or repeated-element) non-null value. */
    private void readSingle(FieldSchema f, JsonToken t) throws IOException {
        switch (f.type) {
            case MESSAGE -> {
                out.tag(f.number, FieldSchema.LEN);
                int mark = out.beginLength();
                readMessageValue(f.child(), t);
                out.endLength(mark);
            }
            case STRING -> {
                if (t != JsonToken.VALUE_STRING) {
                    throw expected("a string", t);
                }
                out.tag(f.number, FieldSchema.LEN);
                out.string(p.getTextCharacters(), p.getTextOffset(), p.getTextLength());
            }
            case BYTES -> {
                byte[] b = readBytes(t);
                out.tag(f.number, FieldSchema.LEN);
                out.bytes(b);
            }
            default -> {
                long bits = readNumeric(f, t);
                if (dropped) {
                    dropped = false;
                    return;
                }
                out.tag(f.number, f.wireType);
                out.numeric(f.type, bits);
            }
        }
    }

    private void readMessageValue(MessageSchema schema, JsonToken t) throws IOException {
        if (schema.wrapperValue != null) {
            readSingle(schema.wrapperValue, t); // a wrapper is written in JSON as its bare value
        } else if (t == JsonToken.START_OBJECT) {
            readObject(schema);
        } else {
            throw expected("an object", t);
        }
    }

    private void readRepeated(FieldSchema f, JsonToken t) throws IOException {
        if (t != JsonToken.START_ARRAY) {
            throw expected("an array", t);
        }
        if (f.numeric) {
            // packed: one tag and length for the whole list, and a tight loop per element
            int tagStart = out.pos;
            out.tag(f.number, FieldSchema.LEN);
            int mark = out.beginLength();
            for (int i = 0; ; i++) {
                path.index(i); // before reading, so that malformed JSON inside the element names it
                JsonToken e = p.nextToken();
                if (e == JsonToken.END_ARRAY) {
                    break;
                }
                long bits = readNumeric(f, e);
                if (dropped) {
                    dropped = false;
                } else {
                    out.numeric(f.type, bits);
                }
            }
            out.endLengthOrDrop(mark, tagStart); // an empty list writes nothing
            return;
        }
        for (int i = 0; ; i++) {
            path.index(i);
            JsonToken e = p.nextToken();
            if (e == JsonToken.END_ARRAY) {
                break;
            }
            if (e == JsonToken.VALUE_NULL) {
                throw error("null is not allowed as a repeated element");
            }
            readSingle(f, e);
        }
    }

    private void readMap(FieldSchema f, JsonToken t) throws IOException {
        if (t != JsonToken.START_OBJECT) {
            throw expected("an object (map)", t);
        }
        MessageSchema entry = f.child();
        FieldSchema keyField = entry.fields[0];
        FieldSchema valueField = entry.fields[1];
        for (JsonToken k = p.nextToken(); k != JsonToken.END_OBJECT; k = p.nextToken()) {
            String key = p.currentName();
            path.key(key);
            JsonToken v = p.nextToken();
            if (v == JsonToken.VALUE_NULL) {
                throw error("null is not allowed as a map value");
            }
            out.tag(f.number, FieldSchema.LEN);
            int mark = out.beginLength();
            if (keyField.type == Type.STRING) {
                out.tag(1, FieldSchema.LEN);
                out.string(key);
            } else {
                out.tag(1, keyField.wireType);
                out.numeric(keyField.type, numericFromString(keyField, key));
            }
            readSingle(valueField, v);
            out.endLength(mark);
        }
    }

    // ---- scalars ----

    private long readNumeric(FieldSchema f, JsonToken t) throws IOException {
        return switch (f.type) {
            case INT32, SINT32, SFIXED32 -> readInt32(t);
            case UINT32, FIXED32 -> readUInt32(t);
            case INT64, SINT64, SFIXED64 -> readInt64(t);
            case UINT64, FIXED64 -> readUInt64(t);
            case BOOL -> readBool(t);
            case FLOAT -> Float.floatToRawIntBits(readFloat(t));
            case DOUBLE -> Double.doubleToRawLongBits(readDouble(t));
            case ENUM -> readEnum(f, t);
            default -> throw new IllegalStateException(f.type.toString());
        };
    }

    /** Map keys arrive as strings whatever their type. */
    private long numericFromString(FieldSchema f, String s) {
        return switch (f.type) {
            case INT32, SINT32, SFIXED32 -> int32(s);
            case UINT32, FIXED32 -> uint32(s);
            case INT64, SINT64, SFIXED64 -> int64(s);
            case UINT64, FIXED64 -> uint64(s);
            case BOOL -> bool(s);
            default -> throw error("unsupported map key type " + f.type);
        };
    }

    private long readInt64(JsonToken t) throws IOException {
        if (t == JsonToken.VALUE_NUMBER_INT) {
            try {
                return p.getLongValue(); // exact: Jackson parses the digits, never through double
            } catch (InputCoercionException e) {
                throw expected("an int64", t);
            }
        }
        if (t == JsonToken.VALUE_STRING) {
            // clients print int64 as strings (Java client, proto3 JSON): parse the digits in place, no String
            char[] c = p.getTextCharacters();
            int off = p.getTextOffset(), len = p.getTextLength();
            if (len > 0 && len <= 18) {
                boolean neg = c[off] == '-';
                int i = neg ? off + 1 : off;
                long v = 0;
                boolean digits = i < off + len;
                for (; i < off + len; i++) {
                    int d = c[i] - '0';
                    if (d < 0 || d > 9) {
                        digits = false;
                        break;
                    }
                    v = v * 10 + d; // at most 18 digits: cannot overflow
                }
                if (digits) {
                    return neg ? -v : v;
                }
            }
            return int64(p.getText());
        }
        if (t == JsonToken.VALUE_NUMBER_FLOAT) {
            return int64(p.getText());
        }
        throw expected("an int64", t);
    }

    private long int64(String s) {
        try {
            return Long.parseLong(s);
        } catch (NumberFormatException e) {
            try {
                return new BigDecimal(s).longValueExact(); // "1e3", "5.0": integral values are accepted
            } catch (ArithmeticException | NumberFormatException e2) {
                throw expected("an int64", s);
            }
        }
    }

    private long readUInt64(JsonToken t) throws IOException {
        if (t == JsonToken.VALUE_NUMBER_INT || t == JsonToken.VALUE_NUMBER_FLOAT || t == JsonToken.VALUE_STRING) {
            return uint64(p.getText());
        }
        throw expected("a uint64", t);
    }

    private long uint64(String s) {
        try {
            BigInteger v = new BigDecimal(s).toBigIntegerExact();
            if (v.signum() >= 0 && v.compareTo(UINT64_MAX) <= 0) {
                return v.longValue();
            }
        } catch (ArithmeticException | NumberFormatException e) {
            // reported below
        }
        throw expected("a uint64", s);
    }

    private long readInt32(JsonToken t) throws IOException {
        if (t == JsonToken.VALUE_NUMBER_INT) {
            try {
                return p.getIntValue();
            } catch (InputCoercionException e) {
                throw expected("an int32", t);
            }
        }
        if (t == JsonToken.VALUE_STRING || t == JsonToken.VALUE_NUMBER_FLOAT) {
            return int32(p.getText());
        }
        throw expected("an int32", t);
    }

    private int int32(String s) {
        try {
            return Integer.parseInt(s);
        } catch (NumberFormatException e) {
            try {
                return new BigDecimal(s).intValueExact();
            } catch (ArithmeticException | NumberFormatException e2) {
                throw expected("an int32", s);
            }
        }
    }

    private long readUInt32(JsonToken t) throws IOException {
        if (t == JsonToken.VALUE_NUMBER_INT || t == JsonToken.VALUE_NUMBER_FLOAT || t == JsonToken.VALUE_STRING) {
            return uint32(p.getText());
        }
        throw expected("a uint32", t);
    }

    private int uint32(String s) {
        try {
            long v = new BigDecimal(s).longValueExact();
            if (v >= 0 && v <= 0xFFFF_FFFFL) {
                return (int) v;
            }
        } catch (ArithmeticException | NumberFormatException e) {
            // reported below
        }
        throw expected("a uint32", s);
    }

    private long readBool(JsonToken t) throws IOException {
        return switch (t) {
            case VALUE_TRUE -> 1;
            case VALUE_FALSE -> 0;
            case VALUE_STRING -> bool(p.getText());
            default -> throw expected("a bool", t);
        };
    }

    private long bool(String s) {
        return switch (s) {
            case "true" -> 1;
            case "false" -> 0;
            default -> throw expected("a bool", s);
        };
    }

    private double readDouble(JsonToken t) throws IOException {
        double d;
        if (t == JsonToken.VALUE_NUMBER_INT || t == JsonToken.VALUE_NUMBER_FLOAT) {
            d = p.getDoubleValue();
        } else if (t == JsonToken.VALUE_STRING) {
            String s = p.getText();
            switch (s) {
                case "NaN" -> {
                    return Double.NaN;
                }
                case "Infinity" -> {
                    return Double.POSITIVE_INFINITY;
                }
                case "-Infinity" -> {
                    return Double.NEGATIVE_INFINITY;
                }
                default -> {
                    try {
                        d = new BigDecimal(s).doubleValue();
                    } catch (NumberFormatException e) {
                        throw expected("a number", s);
                    }
                }
            }
        } else {
            throw expected("a number", t);
        }
        if (Double.isInfinite(d)) {
            throw error("number out of range: " + p.getText());
        }
        return d;
    }

    private float readFloat(JsonToken t) throws IOException {
        double d = readDouble(t); // validates the syntax and handles NaN / Infinity
        if (!Double.isFinite(d)) {
            return (float) d;
        }
        if (Math.abs(d) > FLOAT_LIMIT) {
            throw error("number out of float range: " + p.getText());
        }
        return Float.parseFloat(p.getText()); // not (float) d: rounding twice can miss the nearest float
    }

    private long readEnum(FieldSchema f, JsonToken t) throws IOException {
        if (t == JsonToken.VALUE_NUMBER_INT) {
            return readInt32(t); // unknown numbers are kept as the raw value (open enum)
        }
        if (t != JsonToken.VALUE_STRING) {
            throw expected("an enum name or number", t);
        }
        String s = p.getText();
        Integer n = f.enumNumbers.get(s);
        if (n != null) {
            return n;
        }
        try {
            return Integer.parseInt(s);
        } catch (NumberFormatException e) {
            dropped = true; // unknown name: field left absent, as JsonFormat.ignoringUnknownFields() does
            return 0;
        }
    }

    private byte[] readBytes(JsonToken t) throws IOException {
        if (t != JsonToken.VALUE_STRING) {
            throw expected("base64 bytes", t);
        }
        String s = p.getText();
        try {
            return Base64.getDecoder().decode(s);
        } catch (IllegalArgumentException e) {
            try {
                return Base64.getUrlDecoder().decode(s);
            } catch (IllegalArgumentException e2) {
                throw expected("base64 bytes", s);
            }
        }
    }

    // ---- errors ----

    private ProtoJsonException error(String problem) {
        return new ProtoJsonException(path.toString(), problem);
    }

    private ProtoJsonException expected(String what, String got) {
        String shown = got.length() > 40 ? got.substring(0, 40) + "…" : got;
        return error("expected " + what + " (got \"" + shown + "\")");
    }

    private ProtoJsonException expected(String what, JsonToken t) throws IOException {
        String got = switch (t) {
            case START_OBJECT -> "an object";
            case START_ARRAY -> "an array";
            case VALUE_STRING -> {
                String s = p.getText();
                yield "\"" + (s.length() > 40 ? s.substring(0, 40) + "…" : s) + "\"";
            }
            case VALUE_NUMBER_INT, VALUE_NUMBER_FLOAT, VALUE_TRUE, VALUE_FALSE, VALUE_NULL -> p.getText();
            default -> t.toString();
        };
        return error("expected " + what + " (got " + got + ")");
    }
}
