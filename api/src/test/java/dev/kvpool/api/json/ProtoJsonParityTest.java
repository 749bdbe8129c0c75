package dev.kvpool.api.json;

import static org.junit.jupiter.api.Assertions.assertEquals;

import com.google.protobuf.Descriptors.Descriptor;
import com.google.protobuf.Descriptors.FileDescriptor;
import com.google.protobuf.DynamicMessage;
import com.google.protobuf.Message;
import com.google.protobuf.util.JsonFormat;
import dev.kvpool.api.proto.admin.AdminServiceProto;
import dev.kvpool.api.proto.debug.DebugServiceProto;
import dev.kvpool.api.proto.meta.MetaServiceProto;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * ProtoJson.print must be byte-identical to protobuf-java-util's JsonFormat with the KVCM printer settings, and
 * parse(print(m)) must give m back. Checked over many randomly filled messages of every KVCM message type.
 */
class ProtoJsonParityTest {

    static final JsonFormat.Printer JSON_FORMAT = JsonFormat.printer()
            .preservingProtoFieldNames()
            .alwaysPrintFieldsWithNoPresence()
            .omittingInsignificantWhitespace();

    static Stream<Descriptor> kvcmMessageTypes() {
        List<Descriptor> all = new ArrayList<>();
        for (FileDescriptor f : List.of(MetaServiceProto.getDescriptor(), AdminServiceProto.getDescriptor(),
                DebugServiceProto.getDescriptor())) {
            all.addAll(f.getMessageTypes());
        }
        return all.stream();
    }

    /** The generated builder of a KVCM message type (reflection: java_multiple_files, no nesting). */
    static Message.Builder generatedBuilder(Descriptor d) throws ReflectiveOperationException {
        String pkg = d.getFile().getOptions().getJavaPackage();
        return (Message.Builder) Class.forName(pkg + "." + d.getName()).getMethod("newBuilder").invoke(null);
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("kvcmMessageTypes")
    void generatedMessagesPrintLikeJsonFormat(Descriptor type) throws Exception {
        RandomMessages random = new RandomMessages(type.getFullName().hashCode(), 4);
        for (int i = 0; i < 60; i++) {
            Message m = random.fill(generatedBuilder(type), 0).build();
            checkParityAndRoundTrip(m, generatedBuilder(type));
        }
        // the all-defaults message too
        checkParityAndRoundTrip(generatedBuilder(type).build(), generatedBuilder(type));
    }

    @Test
    void everyScalarMapWrapperAndOneofPrintsLikeJsonFormat() throws Exception {
        RandomMessages random = new RandomMessages(42, 2); // AllTypes recurses: keep the trees small
        for (int i = 0; i < 1000; i++) {
            Message m = random.fill(DynamicMessage.newBuilder(AllTypes.DESCRIPTOR), 0).build();
            checkParityAndRoundTrip(m, DynamicMessage.newBuilder(AllTypes.DESCRIPTOR));
        }
    }

    @Test
    void buildersPrintLikeTheirMessages() throws Exception {
        RandomMessages random = new RandomMessages(7, 4);
        for (Descriptor type : kvcmMessageTypes().toList()) {
            Message.Builder b = random.fill(generatedBuilder(type), 0);
            assertEquals(jsonFormat(b), ProtoJson.printToString(b), type.getFullName());
        }
    }

    static void checkParityAndRoundTrip(Message m, Message.Builder fresh) throws Exception {
        String expected = jsonFormat(m);
        byte[] ours = ProtoJson.print(m);
        assertEquals(expected, new String(ours, StandardCharsets.UTF_8), () -> "print of " + m);
        assertEquals(m, ProtoJson.merge(ours, fresh).build(), () -> "round trip of " + expected);
    }

    /** JsonFormat's text without its HTML-safe escapes, which ProtoJson leaves raw like KVCM's C++ printer. */
    static String jsonFormat(com.google.protobuf.MessageOrBuilder m) throws Exception {
        String in = JSON_FORMAT.print(m);
        StringBuilder out = new StringBuilder(in.length());
        for (int i = 0; i < in.length(); i++) {
            char c = in.charAt(i);
            if (c != '\\') {
                out.append(c);
                continue;
            }
            // an escape: either one of Gson's HTML-safe \\u00XX forms (unescaped here) or copied whole
            String six = in.length() >= i + 6 ? in.substring(i, i + 6) : "";
            switch (six) {
                case "\\u003c" -> out.append('<');
                case "\\u003e" -> out.append('>');
                case "\\u0026" -> out.append('&');
                case "\\u003d" -> out.append('=');
                case "\\u0027" -> out.append('\'');
                default -> {
                    out.append(c).append(in.charAt(i + 1));
                    i++;
                    continue;
                }
            }
            i += 5;
        }
        return out.toString();
    }
}
