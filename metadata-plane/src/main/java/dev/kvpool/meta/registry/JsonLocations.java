package dev.kvpool.meta.registry;

import dev.kvpool.meta.index.Loc;
import dev.kvpool.meta.slots.SlotAllocator;
import dev.kvpool.meta.storage.Storage;
import dev.kvpool.meta.index.StorageKind;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Writes the JSON array of {@code locations} directly from packed location words, byte-identical to printing
 * the CacheLocation messages that {@link Locations#render} builds (a test holds the two together). Everything
 * constant per (instance, storage, spec group) is pre-escaped once; per block only digits are written.
 */
public final class JsonLocations implements LocationSink {
    private static final byte[] HEX = "0123456789abcdef".getBytes(StandardCharsets.US_ASCII);

    /** Pre-rendered pieces of one (storage, spec group) of an instance. */
    record Template(byte[] head, byte[][] specPrefix, byte[][] specSuffix, String[] specNames, boolean mooncake,
                    boolean blkid, int maxBytes) {
        Template(byte[] head, byte[][] specPrefix, byte[][] specSuffix, String[] specNames, boolean mooncake,
                 boolean blkid) {
            this(head, specPrefix, specSuffix, specNames, mooncake, blkid, bound(head, specPrefix, specSuffix));
        }

        /** Most bytes one location can take: constants plus 16 hex digits, "?blkid=" and 10 decimal digits per spec. */
        private static int bound(byte[] head, byte[][] pre, byte[][] suf) {
            int n = head.length + 3;
            for (int j = 0; j < pre.length; j++) {
                n += pre[j].length + suf[j].length + 1 + 16 + BLKID.length + 10;
            }
            return n;
        }
    }

    private static final ConcurrentHashMap<Instance, ConcurrentHashMap<Integer, Template>> TEMPLATES =
            new ConcurrentHashMap<>();

    private final Set<String> filter;
    private int lastTemplateKey = -1;
    private Template last;
    private byte[] buf;
    private int len;
    private int count;
    private byte[] placeholder;

    public JsonLocations(Set<String> filter, int expected) {
        this(filter, expected, new byte[0]);
    }

    /**
     * @param head bytes written before the array (the start of the enclosing response object), so that
     *             {@link #finishObject} hands back the whole response with a single copy
     */
    public JsonLocations(Set<String> filter, int expected, byte[] head) {
        this.filter = filter;
        // ~170 bytes per location of one spec: sized so a typical answer never regrows
        this.buf = new byte[Math.max(256, head.length + expected * 192)];
        put(head);
        put((byte) '[');
    }

    /** Drops cached templates of an instance that went away. */
    public static void forget(Instance inst) {
        TEMPLATES.remove(inst);
    }

    static Template template(Instance inst, Storage st, int specGroup) {
        return TEMPLATES.computeIfAbsent(inst, k -> new ConcurrentHashMap<>())
                .computeIfAbsent(st.number << 8 | specGroup, k -> {
                    int[] specs = inst.specGroups[specGroup];
                    String[] prefixes = inst.uriPrefixes(st);
                    byte[] head = ("{\"type\":\"" + Locations.wire(st.kind).name() + "\",\"spec_size\":" + specs.length
                            + ",\"location_specs\":[").getBytes(StandardCharsets.UTF_8);
                    byte[][] pre = new byte[specs.length][], suf = new byte[specs.length][];
                    String[] names = new String[specs.length];
                    boolean mooncake = st.kind == StorageKind.MOONCAKE;
                    boolean blkid = st.sharesFiles();
                    for (int j = 0; j < specs.length; j++) {
                        int i = specs[j];
                        names[j] = inst.specNames[i];
                        String filePrefix = mooncake ? prefixes[i] : prefixes[i] + "slab_";
                        pre[j] = ("{\"name\":" + quote(inst.specNames[i]) + ",\"uri\":" + openQuote(filePrefix))
                                .getBytes(StandardCharsets.UTF_8);
                        String tail = mooncake ? "&size=" + inst.specSizes[i] : (blkid ? "&size=" : "?size=")
                                + inst.specSizes[i];
                        suf[j] = (escape(tail) + "\"}").getBytes(StandardCharsets.UTF_8);
                    }
                    return new Template(head, pre, suf, names, mooncake, blkid);
                });
    }

    private static String quote(String s) {
        return "\"" + escape(s) + "\"";
    }

    private static String openQuote(String s) {
        return "\"" + escape(s);
    }

    /** JSON string escaping exactly as the project codec prints strings (rare: templates are cached). */
    static String escape(String s) {
        String json = dev.kvpool.api.json.ProtoJson.printToString(
                dev.kvpool.api.proto.meta.LocationSpec.newBuilder().setName(s).build());
        return json.substring("{\"name\":\"".length(), json.length() - "\",\"uri\":\"\"}".length());
    }

    @Override
    public void location(Instance inst, Storage st, long key, long a, long b) {
        // consecutive blocks almost always share storage and spec group: skip the template maps then
        int tk = st.number << 8 | Loc.specGroup(a);
        Template t = tk == lastTemplateKey ? last : (last = template(inst, st, Loc.specGroup(a)));
        lastTemplateKey = tk;
        ensure(t.maxBytes());
        if (count++ > 0) {
            buf[len++] = ',';
        }
        raw(t.head);
        boolean first = true;
        for (int j = 0; j < t.specPrefix.length; j++) {
            if (filter != null && !filter.contains(t.specNames[j])) {
                continue;
            }
            if (!first) {
                buf[len++] = ',';
            }
            first = false;
            raw(t.specPrefix[j]);
            if (t.mooncake) {
                putHex(key, 1);
            } else {
                putHex(SlotAllocator.file(b), 8);
                if (t.blkid) {
                    raw(BLKID);
                    putDecimal(SlotAllocator.slot(b));
                }
            }
            raw(t.specSuffix[j]);
        }
        buf[len++] = ']';
        buf[len++] = '}';
    }

    /** Copies without a bounds check: location() reserved {@link Template#maxBytes()} up front. */
    private void raw(byte[] b) {
        System.arraycopy(b, 0, buf, len, b.length);
        len += b.length;
    }

    private static final byte[] BLKID = escape("?blkid=").getBytes(StandardCharsets.UTF_8);

    @Override
    public void placeholder(Instance inst) {
        if (placeholder == null) {
            placeholder = dev.kvpool.api.json.ProtoJson.print(Locations.placeholder(inst));
        }
        if (count++ > 0) {
            put((byte) ',');
        }
        put(placeholder);
    }

    @Override
    public int count() {
        return count;
    }

    /** The closed array (after the head, if one was given). */
    public byte[] finish() {
        put((byte) ']');
        return Arrays.copyOf(buf, len);
    }

    /** The closed array and the enclosing object: head + array + '}'. */
    public byte[] finishObject() {
        put((byte) ']');
        put((byte) '}');
        return Arrays.copyOf(buf, len);
    }

    private void ensure(int n) {
        if (len + n > buf.length) {
            buf = Arrays.copyOf(buf, Math.max(buf.length * 2, len + n));
        }
    }

    private void put(byte b) {
        ensure(1);
        buf[len++] = b;
    }

    private void put(byte[] b) {
        ensure(b.length);
        System.arraycopy(b, 0, buf, len, b.length);
        len += b.length;
    }

    /** Lower-case hex of the unsigned value, at least {@code minDigits} digits (8 = "%08x", 1 = no padding). */
    private void putHex(long v, int minDigits) {
        int digits = Math.max(minDigits, (64 - Long.numberOfLeadingZeros(v) + 3) / 4);
        for (int i = digits - 1; i >= 0; i--) {
            buf[len + i] = HEX[(int) (v & 15)];
            v >>>= 4;
        }
        len += digits;
    }

    private void putDecimal(int v) {
        int digits = 1;
        for (int x = v; x >= 10; x /= 10) {
            digits++;
        }
        for (int i = digits - 1; i >= 0; i--) {
            buf[len + i] = (byte) ('0' + v % 10);
            v /= 10;
        }
        len += digits;
    }
}
