package dev.kvpool.api.json;

import com.fasterxml.jackson.core.SerializableString;
import com.fasterxml.jackson.core.io.CharacterEscapes;
import com.fasterxml.jackson.core.io.SerializedString;

/**
 * String escaping identical to protobuf-java's JsonFormat, which escapes through Gson's HTML-safe writer:
 * {@code < > & = '} become lower-case {@code \}{@code u003c}-style escapes, as do control characters (except the
 * short forms \b \t \n \f \r) and U+2028/U+2029. Jackson's defaults differ (upper-case hex, no HTML escaping).
 */
final class GsonCompatibleEscapes extends CharacterEscapes {

    static final GsonCompatibleEscapes INSTANCE = new GsonCompatibleEscapes();

    private final int[] asciiCodes = new int[128];
    private final SerializableString[] asciiEscapes = new SerializableString[128];
    private final SerializableString lineSeparator = new SerializedString("\\u2028");
    private final SerializableString paragraphSeparator = new SerializedString("\\u2029");

    private GsonCompatibleEscapes() {
        for (int c = 0; c < 0x20; c++) {
            escape(c, String.format("\\u%04x", c));
        }
        escape('\b', "\\b");
        escape('\t', "\\t");
        escape('\n', "\\n");
        escape('\f', "\\f");
        escape('\r', "\\r");
        escape('"', "\\\"");
        escape('\\', "\\\\");
        for (char c : new char[] {'<', '>', '&', '=', '\''}) {
            escape(c, String.format("\\u%04x", (int) c));
        }
    }

    private void escape(int c, String sequence) {
        asciiCodes[c] = ESCAPE_CUSTOM;
        asciiEscapes[c] = new SerializedString(sequence);
    }

    @Override
    public int[] getEscapeCodesForAscii() {
        return asciiCodes;
    }

    @Override
    public SerializableString getEscapeSequence(int ch) {
        if (ch < 128) {
            return asciiEscapes[ch];
        }
        return ch == 0x2028 ? lineSeparator : ch == 0x2029 ? paragraphSeparator : null;
    }
}
