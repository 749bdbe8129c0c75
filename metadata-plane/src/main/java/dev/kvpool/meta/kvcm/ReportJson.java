package dev.kvpool.meta.kvcm;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import dev.kvpool.api.proto.meta.ReportEventRequest;
import dev.kvpool.api.proto.meta.StorageType;
import java.io.IOException;

/** JSON input quirks of ReportEvent that the generic proto3 JSON codec does not know. */
public final class ReportJson {
    private static final JsonFactory JSON = new JsonFactory();

    private ReportJson() {
    }

    /**
     * An older RTP-LLM publisher sends {@code "storage_type":"ST_EVENT_REPORT"}, a name no proto has (the codec
     * leaves the field unset): read as ST_EVENT_REPORT_L1P5 (kvcm-engine-events.md §2). Only the top level is
     * scanned; only requests whose storage_type came out unset get here.
     */
    public static ReportEventRequest legacyStorageType(byte[] body, ReportEventRequest q) {
        try (JsonParser p = JSON.createParser(body)) {
            if (p.nextToken() != JsonToken.START_OBJECT) {
                return q;
            }
            while (p.nextToken() == JsonToken.FIELD_NAME) {
                String name = p.currentName();
                JsonToken v = p.nextToken();
                if ((name.equals("storage_type") || name.equals("storageType")) && v == JsonToken.VALUE_STRING) {
                    return "ST_EVENT_REPORT".equals(p.getText())
                            ? q.toBuilder().setStorageType(StorageType.ST_EVENT_REPORT_L1P5).build() : q;
                }
                p.skipChildren();
            }
        } catch (IOException e) {
            return q; // the codec already accepted the body; nothing more to learn from it
        }
        return q;
    }
}
