package dev.kvpool.api.json;

import com.fasterxml.jackson.core.JsonEncoding;
import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonFactoryBuilder;
import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.StreamReadConstraints;
import com.fasterxml.jackson.core.StreamReadFeature;
import com.fasterxml.jackson.core.StreamWriteFeature;
import com.fasterxml.jackson.core.json.JsonWriteFeature;
import com.fasterxml.jackson.core.util.ByteArrayBuilder;
import com.google.protobuf.Message;
import com.google.protobuf.MessageOrBuilder;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;

/**
 * The proto3 JSON codec of the KVCM HTTP routes (spec §1.4), driven by protobuf Descriptors over Jackson
 * streaming. Thread-safe and stateless apart from a per-Descriptor field-table cache.
 *
 * <p>Output: proto (snake_case) names; every field without presence printed even at its default (repeated as
 * {@code []}); unset message fields and oneof members omitted, but a oneof member set to zero printed; enums by
 * name (unknown values by number); 64-bit integers as strings; compact; field-number order. Byte-identical to
 * {@code JsonFormat.printer().preservingProtoFieldNames().alwaysPrintFieldsWithNoPresence()
 * .omittingInsignificantWhitespace()} except that {@code < > & = '} are not HTML-escaped (see JsonEscapes).
 *
 * <p>Input: unknown fields ignored at any depth; proto and lowerCamel names; integers from numbers (exact) or
 * strings; enums by name or number (an unknown name leaves the field absent); {@code null} = absent. Anything
 * else that does not fit the message throws {@link ProtoJsonException} naming the field path.
 *
 * <p>Well-known types: the wrappers ({@code google.protobuf.Int64Value} …) map to their bare value; the others
 * (Timestamp, Duration, Struct, Any) are treated as ordinary messages, which the KVCM protos never need.
 */
public final class ProtoJson {
    /**
     * The deepest nesting of objects and arrays a body may have: the KVCM messages need 6, and protobuf itself
     * refuses more than 100 when the message is built; this refuses it while parsing, before any work is spent.
     */
    public static final int MAX_NESTING = 64;

    private static final JsonFactory FACTORY = new JsonFactoryBuilder()
            // vLLM sends whole prompts (64 MiB bodies); do not cap string sizes below that
            .streamReadConstraints(StreamReadConstraints.builder().maxStringLength(Integer.MAX_VALUE)
                    .maxNestingDepth(MAX_NESTING).build())
            // a key given twice is refused (400), as protobuf's own JsonFormat does, instead of last-one-wins
            .enable(StreamReadFeature.STRICT_DUPLICATE_DETECTION)
            .characterEscapes(JsonEscapes.INSTANCE)
            .enable(JsonWriteFeature.COMBINE_UNICODE_SURROGATES_IN_UTF8) // 4-byte UTF-8, as JsonFormat emits
            .disable(StreamReadFeature.AUTO_CLOSE_SOURCE)
            .disable(StreamWriteFeature.AUTO_CLOSE_TARGET)
            .build();

    private ProtoJson() {
    }

    /** Merges a JSON object into {@code builder} and returns it. */
    public static <B extends Message.Builder> B merge(byte[] json, B builder) {
        return merge(json, 0, json.length, builder);
    }

    /** Merges the JSON object in {@code json[off, off + len)} into {@code builder} (no copy of the bytes). */
    public static <B extends Message.Builder> B merge(byte[] json, int off, int len, B builder) {
        try (JsonParser p = FACTORY.createParser(json, off, len)) {
            JsonToWire.merge(p, builder);
            return builder;
        } catch (IOException e) {
            throw new UncheckedIOException(e); // close() of an in-memory parser: not expected
        }
    }

    /** Merges a JSON object read from {@code in} (left open) into {@code builder} and returns it. */
    public static <B extends Message.Builder> B merge(InputStream in, B builder) {
        try (JsonParser p = FACTORY.createParser(in)) {
            JsonToWire.merge(p, builder);
            return builder;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Merges a JSON text into {@code builder} and returns it. */
    public static <B extends Message.Builder> B merge(String json, B builder) {
        return merge(json.getBytes(StandardCharsets.UTF_8), builder);
    }

    /** The message as compact UTF-8 JSON. */
    public static byte[] print(MessageOrBuilder message) {
        ByteArrayBuilder buf = new ByteArrayBuilder(256);
        print(message, buf);
        return buf.toByteArray();
    }

    /** Writes the message as compact UTF-8 JSON to {@code out} (flushed, left open). */
    public static void print(MessageOrBuilder message, OutputStream out) {
        try (JsonGenerator g = FACTORY.createGenerator(out, JsonEncoding.UTF8)) {
            new JsonPrinter(g).print(message);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    public static String printToString(MessageOrBuilder message) {
        return new String(print(message), StandardCharsets.UTF_8);
    }
}
