package dev.kvpool.api.json;

import com.fasterxml.jackson.core.JsonGenerator;
import com.google.protobuf.ByteString;
import com.google.protobuf.Descriptors.EnumValueDescriptor;
import com.google.protobuf.Descriptors.FieldDescriptor.Type;
import com.google.protobuf.Internal;
import com.google.protobuf.Message;
import com.google.protobuf.MessageOrBuilder;
import dev.kvpool.api.json.MessageSchema.FieldSchema;
import java.io.IOException;
import java.util.List;

/**
 * Prints proto3 JSON the way {@code JsonFormat.printer().preservingProtoFieldNames()
 * .alwaysPrintFieldsWithNoPresence().omittingInsignificantWhitespace()} does, byte for byte.
 */
final class JsonPrinter {

    private final JsonGenerator g;

    JsonPrinter(JsonGenerator g) {
        this.g = g;
    }

    void print(MessageOrBuilder m) throws IOException {
        printMessage(m, MessageSchema.of(m.getDescriptorForType()));
    }

    private void printMessage(MessageOrBuilder m, MessageSchema schema) throws IOException {
        if (schema.wrapperValue != null) {
            printValue(schema.wrapperValue, m.getField(schema.wrapperValue.fd));
            return;
        }
        g.writeStartObject();
        for (FieldSchema f : schema.fields) {
            if (f.presence && !m.hasField(f.fd)) {
                continue; // unset message / oneof member; a oneof member set to zero IS printed
            }
            g.writeFieldName(f.printedName);
            Object value = m.getField(f.fd);
            if (f.map) {
                printMap(f, (List<?>) value);
            } else if (f.repeated) {
                printList(f, (List<?>) value);
            } else {
                printValue(f, value);
            }
        }
        g.writeEndObject();
    }

    private void printList(FieldSchema f, List<?> list) throws IOException {
        g.writeStartArray();
        // generated messages hold primitive lists: read them without boxing
        if (list instanceof Internal.LongList longs) {
            boolean unsigned = isUnsigned(f);
            for (int i = 0, n = longs.size(); i < n; i++) {
                long v = longs.getLong(i);
                g.writeString(unsigned ? Long.toUnsignedString(v) : Long.toString(v));
            }
        } else if (list instanceof Internal.IntList ints && f.type != Type.ENUM) {
            boolean unsigned = isUnsigned(f);
            for (int i = 0, n = ints.size(); i < n; i++) {
                int v = ints.getInt(i);
                if (unsigned) {
                    g.writeNumber(Integer.toUnsignedLong(v));
                } else {
                    g.writeNumber(v);
                }
            }
        } else if (list instanceof Internal.BooleanList bools) {
            for (int i = 0, n = bools.size(); i < n; i++) {
                g.writeBoolean(bools.getBoolean(i));
            }
        } else {
            for (Object element : list) {
                printValue(f, element);
            }
        }
        g.writeEndArray();
    }

    private void printMap(FieldSchema f, List<?> entries) throws IOException {
        MessageSchema entry = f.child();
        FieldSchema key = entry.fields[0];
        FieldSchema value = entry.fields[1];
        g.writeStartObject();
        for (Object e : entries) {
            Message m = (Message) e;
            g.writeFieldName(mapKey(key, m.getField(key.fd)));
            printValue(value, m.getField(value.fd));
        }
        g.writeEndObject();
    }

    private static String mapKey(FieldSchema key, Object k) {
        return switch (key.type) {
            case UINT32, FIXED32 -> Integer.toUnsignedString((Integer) k);
            case UINT64, FIXED64 -> Long.toUnsignedString((Long) k);
            default -> k.toString(); // string, bool, signed integers
        };
    }

    private void printValue(FieldSchema f, Object v) throws IOException {
        switch (f.type) {
            case INT32, SINT32, SFIXED32 -> g.writeNumber((Integer) v);
            case UINT32, FIXED32 -> g.writeNumber(Integer.toUnsignedLong((Integer) v));
            case INT64, SINT64, SFIXED64 -> g.writeString(Long.toString((Long) v));
            case UINT64, FIXED64 -> g.writeString(Long.toUnsignedString((Long) v));
            case BOOL -> g.writeBoolean((Boolean) v);
            case FLOAT -> {
                float x = (Float) v;
                if (Float.isFinite(x)) {
                    g.writeNumber(Float.toString(x)); // JsonFormat's text, e.g. 1.0E-7
                } else {
                    g.writeString(nonFinite(x));
                }
            }
            case DOUBLE -> {
                double x = (Double) v;
                if (Double.isFinite(x)) {
                    g.writeNumber(Double.toString(x));
                } else {
                    g.writeString(nonFinite(x));
                }
            }
            case STRING -> g.writeString((String) v);
            // Jackson's default variant is standard base64 with padding, written unescaped like JsonFormat's
            case BYTES -> g.writeBinary(((ByteString) v).toByteArray());
            case ENUM -> {
                EnumValueDescriptor e = (EnumValueDescriptor) v;
                if (f.nullValueEnum) {
                    g.writeNull();
                } else if (e.getIndex() == -1) {
                    g.writeNumber(e.getNumber()); // unknown value: its number
                } else {
                    g.writeString(e.getName());
                }
            }
            case MESSAGE -> printMessage((MessageOrBuilder) v, f.child());
            default -> throw new UnsupportedOperationException("field type " + f.type);
        }
    }

    private static boolean isUnsigned(FieldSchema f) {
        return switch (f.type) {
            case UINT32, FIXED32, UINT64, FIXED64 -> true;
            default -> false;
        };
    }

    private static String nonFinite(double x) {
        return Double.isNaN(x) ? "NaN" : x > 0 ? "Infinity" : "-Infinity";
    }
}
