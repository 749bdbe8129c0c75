package dev.kvpool.engine.event;

import java.io.IOException;
import java.math.BigInteger;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.msgpack.core.MessageFormat;
import org.msgpack.core.MessagePack;
import org.msgpack.core.MessagePackException;
import org.msgpack.core.MessageUnpacker;
import org.msgpack.value.ValueType;

/**
 * Decodes one vLLM / SGLang KV-event payload (the third ZMQ frame, or a Kafka record value) — kvcm-engine-events.md
 * §12.1 rules: batch as array or map, events as arrays (tag first) or maps (tag under {@code type}), unknown keys and
 * extra trailing elements ignored, missing ones nil.
 *
 * <p>Decisions (documented in engine-events/README.md):
 * <ul>
 *   <li>Hashes: msgpack uint64 (≥ 2^63 → negative long, same bits), int64, or bin (last 8 bytes big-endian, shorter
 *       left-padded with zeros). A nil {@code block_hashes} is an empty array.</li>
 *   <li>Token ids: ints; SGLang EAGLE bigram pairs {@code [a, b]} are <em>flattened</em> in order ({@code a, b}), which
 *       is the order SGLang's page hash consumes them (§14), so {@code tokenIds.length} is then 2 × tokens.</li>
 *   <li>{@code extra_keys}: nil, or one entry per block hash (nil or an array) — a count mismatch is malformed.
 *       Values become {@code String}, {@code Long} (ints up to 2^63−1), {@code BigInteger} (uint64 ≥ 2^63, so
 *       re-hashing sees the unsigned value), {@code byte[]}, {@code Double}, {@code Boolean}, {@code List<Object>},
 *       {@code Map<Object,Object>} (insertion order), or null.</li>
 *   <li>Positional {@code BlockStored} variants are told apart by length and type: element 7 a map = SGLang's
 *       {@code metadata} (ignored; {@code loraName} null), a string/nil = vLLM's {@code lora_name}; exactly 10
 *       elements whose element 9 is a string or element 8 an int = the component-aware variant
 *       {@code [.., lora_id, component_type, component_id, snapshot_version, medium]} (component fields ignored).</li>
 *   <li>Unknown event tags: the event is skipped and counted in {@link EventBatch#skippedTags()}.</li>
 *   <li>A missing {@code ts} is 0.0; trailing bytes after the batch are malformed.</li>
 * </ul>
 */
public final class KvEventDecoder {

    public static final int MAX_PAYLOAD_BYTES = 16 * 1024 * 1024;
    public static final int MAX_EVENTS = 100_000;
    /** Per event: block hashes, token ids (after flattening), extra-key entries. */
    public static final int MAX_ITEMS_PER_EVENT = 1_000_000;
    /** Strings and bins (tags, media, adapter names, map keys, bin hashes, extra-key bytes). */
    public static final int MAX_STRING_BYTES = 64 * 1024;
    /** Values of extra keys and other generic fields (metadata, variant elements) in one batch. */
    public static final int MAX_GENERIC_VALUES = 1_000_000;
    /** Nesting of generic values (extra keys, metadata) below the event. */
    public static final int MAX_DEPTH = 16;

    private KvEventDecoder() {
    }

    /** @throws MalformedEventException naming what was wrong; never any other exception on bad bytes */
    public static EventBatch decode(byte[] payload) {
        if (payload == null) {
            throw new MalformedEventException("payload is null");
        }
        if (payload.length > MAX_PAYLOAD_BYTES) {
            throw new MalformedEventException("payload of " + payload.length + " bytes exceeds the limit of "
                    + MAX_PAYLOAD_BYTES + " bytes (MAX_PAYLOAD_BYTES)");
        }
        if (payload.length == 0) {
            throw new MalformedEventException("payload is empty");
        }
        Reader r = new Reader(payload);
        try {
            EventBatch b = r.batch();
            if (r.u.hasNext()) {
                throw new MalformedEventException("trailing bytes after the batch at byte " + r.pos());
            }
            return b;
        } catch (MalformedEventException e) {
            throw e;
        } catch (MessagePackException | IOException e) {
            throw new MalformedEventException("malformed msgpack at byte " + r.pos() + " (" + r.where() + "): "
                    + e.getClass().getSimpleName() + ": " + e.getMessage());
        } catch (RuntimeException e) {
            // Defensive: the contract is that bad bytes only ever surface as MalformedEventException.
            throw new MalformedEventException("undecodable payload at byte " + r.pos() + " (" + r.where() + "): " + e);
        }
    }

    /** Bad input: the caller skips the batch and counts it. */
    public static final class MalformedEventException extends RuntimeException {
        public MalformedEventException(String message) {
            super(message);
        }
    }

    private static final Object NIL = new Object();

    private static final class Reader {
        final byte[] payload;
        MessageUnpacker u;
        long base;
        String ctx = "batch";
        int genericValues;

        Reader(byte[] payload) {
            this.payload = payload;
            this.u = MessagePack.newDefaultUnpacker(payload);
        }

        long pos() {
            return base + u.getTotalReadBytes();
        }

        String where() {
            return ctx;
        }

        long remaining() {
            return payload.length - pos();
        }

        MalformedEventException bad(String where, String what) {
            return new MalformedEventException(where + ": " + what + " (at byte " + pos() + ")");
        }

        /** Re-reads from an absolute offset (for map events whose "type" is not their first key). */
        void seek(long absolute) {
            u = MessagePack.newDefaultUnpacker(payload, (int) absolute, payload.length - (int) absolute);
            base = absolute;
        }

        MessageFormat next(String where) throws IOException {
            if (!u.hasNext()) {
                throw bad(where, "truncated: payload ends where a value is expected");
            }
            MessageFormat f = u.getNextFormat();
            if (f == MessageFormat.NEVER_USED) {
                throw bad(where, "reserved msgpack byte 0xc1");
            }
            return f;
        }

        boolean nil(String where) throws IOException {
            if (next(where) == MessageFormat.NIL) {
                u.unpackNil();
                return true;
            }
            return false;
        }

        int count(int n, String where, int max, String limit, int minBytesEach) {
            if (n < 0 || n > max) {
                throw bad(where, (n < 0 ? "size out of range" : n + " entries exceed the limit of " + max)
                        + " (" + limit + ")");
            }
            if ((long) n * minBytesEach > remaining()) {
                throw bad(where, "truncated: declares " + n + " entries but only " + remaining() + " bytes remain");
            }
            return n;
        }

        int arrayHeader(String where, int max, String limit) throws IOException {
            MessageFormat f = next(where);
            if (f.getValueType() != ValueType.ARRAY) {
                throw bad(where, "expected an array, got " + f.getValueType());
            }
            return count(u.unpackArrayHeader(), where, max, limit, 1);
        }

        byte[] raw(int len, String where) throws IOException {
            if (len < 0 || len > MAX_STRING_BYTES) {
                throw bad(where, "string/bin of " + len + " bytes exceeds the limit of " + MAX_STRING_BYTES
                        + " bytes (MAX_STRING_BYTES)");
            }
            if (len > remaining()) {
                throw bad(where, "truncated: declares " + len + " bytes but only " + remaining() + " remain");
            }
            return u.readPayload(len);
        }

        String utf8(byte[] b, String where) {
            try {
                return StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT)
                        .onUnmappableCharacter(CodingErrorAction.REPORT).decode(ByteBuffer.wrap(b)).toString();
            } catch (CharacterCodingException e) {
                throw bad(where, "invalid UTF-8 in string");
            }
        }

        String string(String where) throws IOException {
            MessageFormat f = next(where);
            if (f.getValueType() != ValueType.STRING) {
                throw bad(where, "expected a string, got " + f.getValueType());
            }
            return utf8(raw(u.unpackRawStringHeader(), where), where);
        }

        String stringOrNil(String where) throws IOException {
            return nil(where) ? null : string(where);
        }

        /** An integer as its 64-bit pattern (uint64 ≥ 2^63 → negative). */
        long int64Bits(String where) throws IOException {
            MessageFormat f = next(where);
            if (f.getValueType() != ValueType.INTEGER) {
                throw bad(where, "expected an integer, got " + f.getValueType());
            }
            return f == MessageFormat.UINT64 ? u.unpackBigInteger().longValue() : u.unpackLong();
        }

        /** A non-negative integer that fits an int. */
        int smallInt(String where) throws IOException {
            MessageFormat f = next(where);
            if (f.getValueType() != ValueType.INTEGER) {
                throw bad(where, "expected an integer, got " + f.getValueType());
            }
            if (f == MessageFormat.UINT64) {
                throw bad(where, "integer out of range");
            }
            long v = u.unpackLong();
            if (v < 0 || v > Integer.MAX_VALUE) {
                throw bad(where, "integer " + v + " out of range [0, " + Integer.MAX_VALUE + "]");
            }
            return (int) v;
        }

        Integer smallIntOrNil(String where) throws IOException {
            return nil(where) ? null : smallInt(where);
        }

        long hash(String where) throws IOException {
            MessageFormat f = next(where);
            switch (f.getValueType()) {
                case INTEGER:
                    return int64Bits(where);
                case BINARY: {
                    byte[] b = raw(u.unpackBinaryHeader(), where);
                    long v = 0;
                    for (int i = Math.max(0, b.length - 8); i < b.length; i++) {
                        v = (v << 8) | (b[i] & 0xffL);
                    }
                    return v;
                }
                default:
                    throw bad(where, "expected a block hash (integer or bin), got " + f.getValueType());
            }
        }

        Long hashOrNil(String where) throws IOException {
            return nil(where) ? null : hash(where);
        }

        long[] hashes(String where) throws IOException {
            if (nil(where)) {
                return new long[0];
            }
            int n = arrayHeader(where, MAX_ITEMS_PER_EVENT, "MAX_ITEMS_PER_EVENT");
            long[] out = new long[n];
            for (int i = 0; i < n; i++) {
                out[i] = hash(where + "[" + i + "]");
            }
            return out;
        }

        long[] tokens(String where) throws IOException {
            if (nil(where)) {
                return new long[0];
            }
            int n = arrayHeader(where, MAX_ITEMS_PER_EVENT, "MAX_ITEMS_PER_EVENT");
            long[] out = new long[n];
            int k = 0;
            for (int i = 0; i < n; i++) {
                String w = where + "[" + i + "]";
                int need = next(w).getValueType() == ValueType.ARRAY ? 2 : 1;
                if (k + need > MAX_ITEMS_PER_EVENT) {
                    throw bad(where, "more than " + MAX_ITEMS_PER_EVENT
                            + " token ids after flattening bigram pairs (MAX_ITEMS_PER_EVENT)");
                }
                if (k + need > out.length) {
                    out = Arrays.copyOf(out, (int) Math.min(MAX_ITEMS_PER_EVENT, Math.max(2L * out.length, k + need)));
                }
                if (need == 2) {
                    // SGLang EAGLE bigram [a, b]: flattened in the order its page hash consumes them.
                    int m = arrayHeader(w, 2, "a bigram pair has 2 elements");
                    if (m != 2) {
                        throw bad(w, "a bigram token pair must have 2 elements, got " + m);
                    }
                    out[k++] = int64Bits(w + "[0]");
                    out[k++] = int64Bits(w + "[1]");
                } else {
                    out[k++] = int64Bits(w);
                }
            }
            return k == out.length ? out : Arrays.copyOf(out, k);
        }

        /** Any value, bounded; NIL stands for msgpack nil so callers can tell "present nil" from "absent". */
        Object any(String where, int depth) throws IOException {
            if (depth > MAX_DEPTH) {
                throw bad(where, "values nested deeper than " + MAX_DEPTH + " levels (MAX_DEPTH)");
            }
            if (++genericValues > MAX_GENERIC_VALUES) {
                // Caps the boxed objects a small payload can make us allocate (an empty array is 1 byte on the wire).
                throw bad(where, "more than " + MAX_GENERIC_VALUES
                        + " extra-key / metadata values in one batch (MAX_GENERIC_VALUES)");
            }
            MessageFormat f = next(where);
            switch (f.getValueType()) {
                case NIL:
                    u.unpackNil();
                    return NIL;
                case BOOLEAN:
                    return u.unpackBoolean();
                case INTEGER:
                    if (f == MessageFormat.UINT64) {
                        BigInteger b = u.unpackBigInteger();
                        return b.bitLength() < 64 ? (Object) b.longValue() : b;
                    }
                    return u.unpackLong();
                case FLOAT:
                    return u.unpackDouble();
                case STRING:
                    return utf8(raw(u.unpackRawStringHeader(), where), where);
                case BINARY:
                    return raw(u.unpackBinaryHeader(), where);
                case ARRAY: {
                    int n = count(u.unpackArrayHeader(), where, MAX_ITEMS_PER_EVENT, "MAX_ITEMS_PER_EVENT", 1);
                    List<Object> l = new ArrayList<>(Math.min(n, 1024));
                    for (int i = 0; i < n; i++) {
                        Object v = any(where + "[" + i + "]", depth + 1);
                        l.add(v == NIL ? null : v);
                    }
                    return l;
                }
                case MAP: {
                    int n = count(u.unpackMapHeader(), where, MAX_ITEMS_PER_EVENT, "MAX_ITEMS_PER_EVENT", 2);
                    Map<Object, Object> m = new LinkedHashMap<>();
                    for (int i = 0; i < n; i++) {
                        Object k = any(where + "{key " + i + "}", depth + 1);
                        Object v = any(where + "{" + k + "}", depth + 1);
                        m.put(k == NIL ? null : k, v == NIL ? null : v);
                    }
                    return m;
                }
                default:
                    throw bad(where, "unsupported msgpack type " + f.getValueType());
            }
        }

        EventBatch batch() throws IOException {
            MessageFormat f = next("batch");
            double ts = 0;
            Integer rank = null;
            Events ev = new Events();
            if (f.getValueType() == ValueType.ARRAY) {
                int n = count(u.unpackArrayHeader(), "batch", 3, "a batch array has 2 or 3 elements", 1);
                if (n < 2) {
                    throw bad("batch", "a batch array needs [ts, events(, data_parallel_rank)], got " + n
                            + " element(s)");
                }
                ts = ts("batch.ts");
                events(ev);
                if (n == 3) {
                    rank = rank("batch.data_parallel_rank");
                }
            } else if (f.getValueType() == ValueType.MAP) {
                int n = count(u.unpackMapHeader(), "batch", 64, "batch map keys", 2);
                for (int i = 0; i < n; i++) {
                    String k = string("batch{key " + i + "}");
                    switch (k) {
                        case "ts" -> ts = ts("batch.ts");
                        case "events" -> events(ev);
                        case "data_parallel_rank" -> rank = rank("batch.data_parallel_rank");
                        default -> u.skipValue();
                    }
                }
            } else {
                throw bad("batch", "expected an array or a map, got " + f.getValueType());
            }
            return new EventBatch(ts, ev.list, rank, ev.skipped);
        }

        double ts(String where) throws IOException {
            if (nil(where)) {
                return 0;
            }
            MessageFormat f = next(where);
            return switch (f.getValueType()) {
                case FLOAT -> u.unpackDouble();
                case INTEGER -> (double) int64Bits(where);
                default -> throw bad(where, "expected a number, got " + f.getValueType());
            };
        }

        Integer rank(String where) throws IOException {
            return smallIntOrNil(where);
        }

        static final class Events {
            final List<EngineEvent> list = new ArrayList<>();
            final Map<String, Integer> skipped = new HashMap<>();
        }

        void events(Events ev) throws IOException {
            if (nil("batch.events")) {
                return;
            }
            int n = arrayHeader("batch.events", MAX_EVENTS, "MAX_EVENTS");
            if (ev.list.size() + n > MAX_EVENTS) {
                throw bad("batch.events", "more than " + MAX_EVENTS + " events (MAX_EVENTS)");
            }
            for (int i = 0; i < n; i++) {
                String w = "events[" + i + "]";
                ctx = w;
                MessageFormat f = next(w);
                EngineEvent e;
                if (f.getValueType() == ValueType.ARRAY) {
                    e = arrayEvent(w, ev);
                } else if (f.getValueType() == ValueType.MAP) {
                    e = mapEvent(w, ev);
                } else {
                    throw bad(w, "an event must be an array or a map, got " + f.getValueType());
                }
                if (e != null) {
                    ev.list.add(e);
                }
            }
            ctx = "batch";
        }

        private void skipRest(int n) throws IOException {
            for (int i = 0; i < n; i++) {
                u.skipValue();
            }
        }

        EngineEvent arrayEvent(String w, Events ev) throws IOException {
            int n = count(u.unpackArrayHeader(), w, 256, "event array elements", 1);
            if (n == 0) {
                throw bad(w, "empty event array (no tag)");
            }
            String tag = string(w + "[0] (tag)");
            switch (tag) {
                case "BlockStored" -> {
                    return arrayStored(w, n);
                }
                case "BlockRemoved" -> {
                    long[] h = n > 1 ? hashes(w + ".block_hashes") : new long[0];
                    String medium = n > 2 ? stringOrNil(w + ".medium") : null;
                    Integer group = n > 3 ? smallIntOrNil(w + ".group_idx") : null;
                    skipRest(n - 4);
                    return new EngineEvent.BlockRemoved(h, medium, group);
                }
                case "AllBlocksCleared" -> {
                    skipRest(n - 1);
                    return new EngineEvent.AllBlocksCleared();
                }
                default -> {
                    skipRest(n - 1);
                    ev.skipped.merge(tag, 1, Integer::sum);
                    return null;
                }
            }
        }

        EngineEvent arrayStored(String w, int n) throws IOException {
            long[] hashes = n > 1 ? hashes(w + ".block_hashes") : new long[0];
            Long parent = n > 2 ? hashOrNil(w + ".parent_block_hash") : null;
            long[] tokens = n > 3 ? tokens(w + ".token_ids") : new long[0];
            Integer bs = n > 4 ? smallIntOrNil(w + ".block_size") : null;
            Long lora = null;
            if (n > 5 && !nil(w + ".lora_id")) {
                lora = int64Bits(w + ".lora_id");
            }
            // Elements 6.. differ between vLLM, SGLang and the component-aware variant: read them generically, then
            // tell the layouts apart by length and type.
            Object[] g = new Object[12];
            Arrays.fill(g, NIL);
            for (int i = 6; i < n; i++) {
                if (i < 12) {
                    g[i] = any(w + "[" + i + "]", 1);
                } else {
                    u.skipValue();
                }
            }
            String medium;
            String loraName = null;
            List<Object> extra = null;
            Integer group = null;
            String kind = null;
            Integer window = null;
            boolean component = n == 10 && (g[9] instanceof String || g[8] instanceof Long);
            if (component) {
                medium = str(g[9], w + ".medium");
            } else {
                medium = str(g[6], w + ".medium");
                if (!(g[7] instanceof Map)) { // a map at 7 is SGLang's metadata {cache_salt, session_id}
                    loraName = str(g[7], w + ".lora_name");
                }
                extra = extraKeys(g[8], w + ".extra_keys", hashes.length);
                group = smallInt(g[9], w + ".group_idx");
                kind = str(g[10], w + ".kv_cache_spec_kind");
                window = smallInt(g[11], w + ".kv_cache_spec_sliding_window");
            }
            return new EngineEvent.BlockStored(hashes, parent, tokens, bs == null ? 0 : bs, lora, medium, loraName,
                    extra, group, kind, window);
        }

        String str(Object v, String where) {
            if (v == NIL || v == null) {
                return null;
            }
            if (v instanceof String s) {
                return s;
            }
            throw bad(where, "expected a string or nil, got " + typeName(v));
        }

        Integer smallInt(Object v, String where) {
            if (v == NIL || v == null) {
                return null;
            }
            if (v instanceof Long l && l >= 0 && l <= Integer.MAX_VALUE) {
                return (int) (long) l;
            }
            throw bad(where, "expected an integer in [0, " + Integer.MAX_VALUE + "] or nil, got " + typeName(v)
                    + (v instanceof Long || v instanceof BigInteger ? " " + v : ""));
        }

        @SuppressWarnings("unchecked")
        List<Object> extraKeys(Object v, String where, int blocks) {
            if (v == NIL || v == null) {
                return null;
            }
            if (!(v instanceof List<?> l)) {
                throw bad(where, "expected an array (one entry per block) or nil, got " + typeName(v));
            }
            if (l.size() != blocks) {
                throw bad(where, l.size() + " entries for " + blocks + " block hashes (one per block expected)");
            }
            for (int i = 0; i < l.size(); i++) {
                Object e = l.get(i);
                if (e != null && !(e instanceof List)) {
                    throw bad(where + "[" + i + "]", "expected an array or nil, got " + typeName(e));
                }
            }
            return java.util.Collections.unmodifiableList((List<Object>) l);
        }

        static String typeName(Object v) {
            if (v instanceof String) {
                return "STRING";
            }
            if (v instanceof Long || v instanceof BigInteger) {
                return "INTEGER";
            }
            if (v instanceof byte[]) {
                return "BINARY";
            }
            if (v instanceof List) {
                return "ARRAY";
            }
            if (v instanceof Map) {
                return "MAP";
            }
            if (v instanceof Double) {
                return "FLOAT";
            }
            if (v instanceof Boolean) {
                return "BOOLEAN";
            }
            return "NIL";
        }

        EngineEvent mapEvent(String w, Events ev) throws IOException {
            int n = count(u.unpackMapHeader(), w, 256, "event map keys", 2);
            long start = pos();
            // Find the tag first: "type" need not be the first key, and an unknown tag's fields are not ours to check.
            String tag = null;
            for (int i = 0; i < n; i++) {
                String k = string(w + "{key " + i + "}");
                if (k.equals("type")) {
                    tag = string(w + ".type");
                } else {
                    u.skipValue();
                }
            }
            if (tag == null) {
                throw bad(w, "event map without a \"type\" key");
            }
            if (!tag.equals("BlockStored") && !tag.equals("BlockRemoved") && !tag.equals("AllBlocksCleared")) {
                ev.skipped.merge(tag, 1, Integer::sum);
                return null;
            }
            long end = pos();
            seek(start);
            long[] hashes = new long[0];
            Long parent = null;
            long[] tokens = new long[0];
            Integer bs = null;
            Long lora = null;
            String medium = null;
            String loraName = null;
            Object extra = NIL;
            Integer group = null;
            String kind = null;
            Integer window = null;
            for (int i = 0; i < n; i++) {
                String k = string(w + "{key " + i + "}");
                String f = w + "." + k;
                switch (k) {
                    case "block_hashes" -> hashes = hashes(f);
                    case "parent_block_hash" -> parent = hashOrNil(f);
                    case "token_ids" -> tokens = tokens(f);
                    case "block_size" -> bs = smallIntOrNil(f);
                    case "lora_id" -> lora = nil(f) ? null : int64Bits(f);
                    case "medium" -> medium = stringOrNil(f);
                    case "lora_name" -> loraName = stringOrNil(f);
                    case "extra_keys" -> extra = any(f, 1);
                    case "group_idx" -> group = smallIntOrNil(f);
                    case "kv_cache_spec_kind" -> kind = stringOrNil(f);
                    case "kv_cache_spec_sliding_window" -> window = smallIntOrNil(f);
                    default -> u.skipValue();
                }
            }
            if (pos() != end) {
                throw bad(w, "inconsistent re-read of the event map");
            }
            return switch (tag) {
                case "BlockStored" -> new EngineEvent.BlockStored(hashes, parent, tokens, bs == null ? 0 : bs, lora,
                        medium, loraName, extraKeys(extra, w + ".extra_keys", hashes.length), group, kind, window);
                case "BlockRemoved" -> new EngineEvent.BlockRemoved(hashes, medium, group);
                default -> new EngineEvent.AllBlocksCleared();
            };
        }
    }
}
