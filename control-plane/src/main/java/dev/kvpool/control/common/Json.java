package dev.kvpool.control.common;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.datatype.jsr310.JavaTimeModule;
import com.google.protobuf.Message;
import dev.kvpool.api.json.BodyErrors;
import dev.kvpool.api.json.ProtoJson;
import java.io.IOException;
import java.io.UncheckedIOException;

/** JSON helpers: one mapper for stored blobs and events; proto messages through the KVCM codec. */
public final class Json {
    public static final ObjectMapper MAPPER = new ObjectMapper().registerModule(new JavaTimeModule())
            .disable(SerializationFeature.WRITE_DATES_AS_TIMESTAMPS);

    private Json() {
    }

    public static String write(Object o) {
        try {
            return MAPPER.writeValueAsString(o);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    public static JsonNode tree(Object o) {
        return MAPPER.valueToTree(o);
    }

    public static JsonNode read(String s) {
        try {
            return MAPPER.readTree(s);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /**
     * Client JSON carried inside a request (a KVCM config snapshot): a key given twice and nesting deeper than
     * {@link ProtoJson#MAX_NESTING} are refused, as in request bodies.
     */
    private static final ObjectMapper CLIENT = BodyErrors.strict(new ObjectMapper(), true);

    public static JsonNode readClient(String s) {
        try {
            return CLIENT.readTree(s);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** What was wrong with client JSON, in a line ({@link BodyErrors} words). */
    public static String problem(Throwable e) {
        BodyErrors.Fault f = BodyErrors.of(e);
        return f != null ? f.message() : String.valueOf(e.getMessage());
    }

    public static <T> T read(String s, Class<T> type) {
        try {
            return MAPPER.readValue(s, type);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    public static String proto(Message m) {
        return new String(ProtoJson.print(m), java.nio.charset.StandardCharsets.UTF_8);
    }
}
