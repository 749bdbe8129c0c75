package dev.kvpool.api.json;

import com.fasterxml.jackson.core.SerializableString;
import com.fasterxml.jackson.core.io.CharacterEscapes;
import com.fasterxml.jackson.core.io.SerializedString;

/**
 * String escaping as KVCM's C++ printer does it: only what JSON requires — quote, backslash, control characters
 * (short forms \b \t \n \f \r, else lower-case {@code \}{@code u00XX}) — plus U+2028/U+2029. Unlike
 * protobuf-java's JsonFormat (Gson's HTML-safe writer) {@code < > & = '} stay raw: every URI has '=' and '&', and
 * escaping them would grow the hot GetCacheLocation responses by a tenth for no client's benefit.
 */
final class JsonEscapes extends CharacterEscapes {

    static final JsonEscapes INSTANCE = new JsonEscapes();

    private final int[] asciiCodes = new int[128];
    private final SerializableString[] asciiEscapes = new SerializableString[128];
    private final SerializableString lineSeparator = new SerializedString("\\u2028");
    private final SerializableString paragraphSeparator = new SerializedString("\\u2029");

    private JsonEscapes() {
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
