package dev.kvpool.control.common;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.datatype.jsr310.JavaTimeModule;
import com.google.protobuf.Message;
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
