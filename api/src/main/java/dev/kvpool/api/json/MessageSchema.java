package dev.kvpool.api.json;

import com.fasterxml.jackson.core.io.SerializedString;
import com.google.protobuf.Descriptors.Descriptor;
import com.google.protobuf.Descriptors.EnumDescriptor;
import com.google.protobuf.Descriptors.EnumValueDescriptor;
import com.google.protobuf.Descriptors.FieldDescriptor;
import com.google.protobuf.Descriptors.FieldDescriptor.Type;
import java.util.Comparator;
import java.util.HashMap;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Per-message field table, built once per Descriptor and shared by every thread: the reflection work
 * (names, types, wire tags, enum name maps) is paid once, not per request.
 */
final class MessageSchema {

    private static final ConcurrentHashMap<Descriptor, MessageSchema> CACHE = new ConcurrentHashMap<>();

    /** Wrapper types print as their bare value (proto3 JSON mapping). */
    private static final Set<String> WRAPPERS = Set.of(
            "google.protobuf.DoubleValue", "google.protobuf.FloatValue", "google.protobuf.Int64Value",
            "google.protobuf.UInt64Value", "google.protobuf.Int32Value", "google.protobuf.UInt32Value",
            "google.protobuf.BoolValue", "google.protobuf.StringValue", "google.protobuf.BytesValue");

    /**
     * Input-only aliases for fields that upstream renamed between versions (spec §B.5: RegisterInstanceRequest
     * field 8 was {@code query_type} in one version, {@code default_query_type} in another).
     */
    private static final Map<String, Map<String, String>> ALIASES = Map.of(
            "kv_cache_manager.proto.meta.RegisterInstanceRequest", Map.of("query_type", "default_query_type"),
            "kv_cache_manager.proto.meta.InstanceInfo", Map.of("query_type", "default_query_type"),
            // kvcm-engine-events.md §6.1: admin @0368fbf spelled InstanceGroup field 10 this way
            "kv_cache_manager.proto.admin.InstanceGroup",
            Map.of("event_reporting_storage_candidates", "event_report_storage_candidates"));

    /** In field-number order, which is the order protobuf-java's JsonFormat prints in. */
    final FieldSchema[] fields;
    /** Non-null for wrapper types: the {@code value} field. */
    final FieldSchema wrapperValue;
    private final Map<String, FieldSchema> byJsonKey;

    static MessageSchema of(Descriptor descriptor) {
        // building never recurses (child schemas resolve lazily), so computeIfAbsent cannot deadlock
        return CACHE.computeIfAbsent(descriptor, MessageSchema::new);
    }

    private MessageSchema(Descriptor descriptor) {
        this.fields = descriptor.getFields().stream()
                .sorted(Comparator.comparingInt(FieldDescriptor::getNumber))
                .map(FieldSchema::new)
                .toArray(FieldSchema[]::new);
        Map<String, FieldSchema> keys = new HashMap<>();
        for (FieldSchema f : fields) {
            keys.put(f.name, f);
            keys.putIfAbsent(f.fd.getJsonName(), f);
        }
        ALIASES.getOrDefault(descriptor.getFullName(), Map.of()).forEach((alias, target) -> {
            FieldSchema f = keys.get(target);
            if (f != null) {
                keys.putIfAbsent(alias, f);
                keys.putIfAbsent(camel(alias), f);
            }
        });
        this.byJsonKey = keys;
        this.wrapperValue = WRAPPERS.contains(descriptor.getFullName()) ? fields[0] : null;
    }

    FieldSchema lookup(String jsonKey) {
        return byJsonKey.get(jsonKey);
    }

    private static String camel(String snake) {
        StringBuilder sb = new StringBuilder(snake.length());
        boolean up = false;
        for (int i = 0; i < snake.length(); i++) {
            char c = snake.charAt(i);
            if (c == '_') {
                up = true;
            } else {
                sb.append(up ? Character.toUpperCase(c) : c);
                up = false;
            }
        }
        return sb.toString();
    }

    static final class FieldSchema {
        static final int VARINT = 0, I64 = 1, LEN = 2, I32 = 5;

        final FieldDescriptor fd;
        final String name;
        final SerializedString printedName;
        final int number;
        final Type type;
        final boolean repeated;
        final boolean map;
        /** Printed only when set: message fields, oneof members, proto3 {@code optional}. */
        final boolean presence;
        /** Numeric scalar: packed when repeated. */
        final boolean numeric;
        final int wireType;
        /** Enum value names → numbers; null unless an enum field. */
        final Map<String, Integer> enumNumbers;
        final boolean nullValueEnum;
        private volatile MessageSchema child;

        private FieldSchema(FieldDescriptor fd) {
            this.fd = fd;
            this.name = fd.getName();
            this.printedName = new SerializedString(name);
            this.number = fd.getNumber();
            this.type = fd.getType();
            this.repeated = fd.isRepeated();
            this.map = fd.isMapField();
            this.presence = !repeated && fd.hasPresence();
            this.wireType = wireType(type);
            this.numeric = wireType != LEN;
            if (type == Type.ENUM) {
                EnumDescriptor e = fd.getEnumType();
                Map<String, Integer> m = new HashMap<>();
                for (EnumValueDescriptor v : e.getValues()) {
                    m.putIfAbsent(v.getName(), v.getNumber());
                }
                this.enumNumbers = m;
                this.nullValueEnum = e.getFullName().equals("google.protobuf.NullValue");
            } else {
                this.enumNumbers = null;
                this.nullValueEnum = false;
            }
        }

        /** The schema of a message-typed field (for a map field: of its entry type, key = fields[0]). */
        MessageSchema child() {
            MessageSchema c = child;
            if (c == null) {
                c = MessageSchema.of(fd.getMessageType());
                child = c;
            }
            return c;
        }

        private static int wireType(Type type) {
            return switch (type) {
                case INT32, INT64, UINT32, UINT64, SINT32, SINT64, BOOL, ENUM -> VARINT;
                case FIXED64, SFIXED64, DOUBLE -> I64;
                case FIXED32, SFIXED32, FLOAT -> I32;
                case STRING, BYTES, MESSAGE -> LEN;
                case GROUP -> throw new UnsupportedOperationException("proto2 groups are not supported");
            };
        }
    }
}
