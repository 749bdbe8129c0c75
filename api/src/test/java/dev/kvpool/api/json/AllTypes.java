package dev.kvpool.api.json;

import com.google.protobuf.DescriptorProtos.DescriptorProto;
import com.google.protobuf.DescriptorProtos.EnumDescriptorProto;
import com.google.protobuf.DescriptorProtos.EnumValueDescriptorProto;
import com.google.protobuf.DescriptorProtos.FieldDescriptorProto;
import com.google.protobuf.DescriptorProtos.FieldDescriptorProto.Label;
import com.google.protobuf.DescriptorProtos.FieldDescriptorProto.Type;
import com.google.protobuf.DescriptorProtos.FileDescriptorProto;
import com.google.protobuf.DescriptorProtos.MessageOptions;
import com.google.protobuf.DescriptorProtos.OneofDescriptorProto;
import com.google.protobuf.Descriptors.Descriptor;
import com.google.protobuf.Descriptors.DescriptorValidationException;
import com.google.protobuf.Descriptors.FileDescriptor;
import com.google.protobuf.WrappersProto;

/**
 * A proto3 message, built at test time, with every scalar type (singular and repeated), maps, wrappers, a
 * recursive field, a oneof and fields declared out of number order: the KVCM protos use only a few types.
 */
final class AllTypes {

    private static final Type[] SCALARS = {Type.TYPE_INT32, Type.TYPE_INT64, Type.TYPE_UINT32, Type.TYPE_UINT64,
        Type.TYPE_SINT32, Type.TYPE_SINT64, Type.TYPE_FIXED32, Type.TYPE_FIXED64, Type.TYPE_SFIXED32,
        Type.TYPE_SFIXED64, Type.TYPE_FLOAT, Type.TYPE_DOUBLE, Type.TYPE_BOOL, Type.TYPE_STRING, Type.TYPE_BYTES};
    private static final String[] WRAPPERS = {"DoubleValue", "FloatValue", "Int64Value", "UInt64Value",
        "Int32Value", "UInt32Value", "BoolValue", "StringValue", "BytesValue"};

    // after the arrays above: static initialisers run in order
    static final Descriptor DESCRIPTOR = build();

    private AllTypes() {
    }

    private static Descriptor build() {
        DescriptorProto.Builder m = DescriptorProto.newBuilder().setName("AllTypes");
        // declared in reverse so that printing must sort by number
        m.addField(field("zz_last_declared_first", 200, Type.TYPE_STRING, Label.LABEL_OPTIONAL));
        for (int i = 0; i < SCALARS.length; i++) {
            String t = SCALARS[i].name().substring(5).toLowerCase();
            m.addField(field("s_" + t, i + 1, SCALARS[i], Label.LABEL_OPTIONAL));
            m.addField(field("r_" + t, i + 21, SCALARS[i], Label.LABEL_REPEATED));
        }
        m.addField(field("s_enum", 16, Type.TYPE_ENUM, Label.LABEL_OPTIONAL).setTypeName(".kvpool.test.Color"));
        m.addField(field("r_enum", 36, Type.TYPE_ENUM, Label.LABEL_REPEATED).setTypeName(".kvpool.test.Color"));
        m.addField(message("child", 40, ".kvpool.test.AllTypes", Label.LABEL_OPTIONAL));
        m.addField(message("children", 41, ".kvpool.test.AllTypes", Label.LABEL_REPEATED));
        for (int i = 0; i < WRAPPERS.length; i++) {
            m.addField(message("w_" + WRAPPERS[i].toLowerCase(), 50 + i, ".google.protobuf." + WRAPPERS[i],
                    Label.LABEL_OPTIONAL));
        }
        m.addField(message("rw_int64", 60, ".google.protobuf.Int64Value", Label.LABEL_REPEATED));
        addMap(m, "m_str_int64", 70, Type.TYPE_STRING, Type.TYPE_INT64, null);
        addMap(m, "m_int32_msg", 71, Type.TYPE_INT32, Type.TYPE_MESSAGE, ".kvpool.test.AllTypes");
        addMap(m, "m_bool_str", 72, Type.TYPE_BOOL, Type.TYPE_STRING, null);
        addMap(m, "m_uint64_double", 73, Type.TYPE_UINT64, Type.TYPE_DOUBLE, null);
        addMap(m, "m_sint32_enum", 74, Type.TYPE_SINT32, Type.TYPE_ENUM, ".kvpool.test.Color");
        addMap(m, "m_fixed32_bytes", 75, Type.TYPE_FIXED32, Type.TYPE_BYTES, null);
        m.addOneofDecl(OneofDescriptorProto.newBuilder().setName("choice"));
        m.addField(field("o_int32", 80, Type.TYPE_INT32, Label.LABEL_OPTIONAL).setOneofIndex(0));
        m.addField(field("o_string", 81, Type.TYPE_STRING, Label.LABEL_OPTIONAL).setOneofIndex(0));
        m.addField(message("o_msg", 82, ".kvpool.test.AllTypes", Label.LABEL_OPTIONAL).setOneofIndex(0));
        m.addField(field("o_enum", 83, Type.TYPE_ENUM, Label.LABEL_OPTIONAL).setOneofIndex(0)
                .setTypeName(".kvpool.test.Color"));

        EnumDescriptorProto color = EnumDescriptorProto.newBuilder().setName("Color")
                .addValue(EnumValueDescriptorProto.newBuilder().setName("COLOR_UNSPECIFIED").setNumber(0))
                .addValue(EnumValueDescriptorProto.newBuilder().setName("RED").setNumber(1))
                .addValue(EnumValueDescriptorProto.newBuilder().setName("BLUE").setNumber(-2))
                .build();
        FileDescriptorProto file = FileDescriptorProto.newBuilder()
                .setName("kvpool_alltypes_test.proto").setPackage("kvpool.test").setSyntax("proto3")
                .addDependency("google/protobuf/wrappers.proto")
                .addMessageType(m).addEnumType(color).build();
        try {
            return FileDescriptor.buildFrom(file, new FileDescriptor[] {WrappersProto.getDescriptor()})
                    .findMessageTypeByName("AllTypes");
        } catch (DescriptorValidationException e) {
            throw new IllegalStateException(e);
        }
    }

    private static FieldDescriptorProto.Builder field(String name, int number, Type type, Label label) {
        return FieldDescriptorProto.newBuilder().setName(name).setNumber(number).setType(type).setLabel(label);
    }

    private static FieldDescriptorProto.Builder message(String name, int number, String typeName, Label label) {
        return field(name, number, Type.TYPE_MESSAGE, label).setTypeName(typeName);
    }

    private static void addMap(DescriptorProto.Builder m, String name, int number, Type key, Type value,
            String valueTypeName) {
        String entryName = Character.toUpperCase(name.charAt(0)) + name.substring(1) + "Entry";
        FieldDescriptorProto.Builder v = field("value", 2, value, Label.LABEL_OPTIONAL);
        if (valueTypeName != null) {
            v.setTypeName(valueTypeName);
        }
        m.addNestedType(DescriptorProto.newBuilder().setName(entryName)
                .setOptions(MessageOptions.newBuilder().setMapEntry(true))
                .addField(field("key", 1, key, Label.LABEL_OPTIONAL))
                .addField(v));
        m.addField(message(name, number, ".kvpool.test.AllTypes." + entryName, Label.LABEL_REPEATED));
    }
}
