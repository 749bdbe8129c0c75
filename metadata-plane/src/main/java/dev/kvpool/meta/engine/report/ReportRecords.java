package dev.kvpool.meta.engine.report;

import dev.kvpool.meta.index.IndexStore;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Reported block metadata, persisted as index-store records (the same durable record API the control-plane sync
 * uses): one section per instance, one record per (reporter, block, medium) named
 * {@code <l1p5|l2>#<host_ip_port>#<medium>#<signed key>} holding the specs. On the embedded store a record is one
 * journal frame and survives a restart; on Redis it is a field of one hash per instance and survives a leader
 * change. Neither host nor medium may contain '#', so the name splits back unambiguously.
 */
final class ReportRecords {
    static final String SECTION = "kvcm-report/";

    record Loaded(boolean l2, String host, String medium, long key, Map<String, Reporter.Spec> specs) {
    }

    private final IndexStore store;

    ReportRecords(IndexStore store) {
        this.store = store;
    }

    static String name(Reporter r, String medium, long key) {
        return (r.l2 ? "l2#" : "l1p5#") + r.host + "#" + medium + "#" + key;
    }

    void put(Reporter r, long key, String medium, Map<String, Reporter.Spec> specs) {
        if (specs == null || specs.isEmpty()) {
            store.removeRecord(SECTION + r.instance, name(r, medium, key));
        } else {
            store.putRecord(SECTION + r.instance, name(r, medium, key), encode(specs));
        }
    }

    void remove(Reporter r, long key, String medium) {
        store.removeRecord(SECTION + r.instance, name(r, medium, key));
    }

    /** Everything persisted for an instance; records that do not parse are skipped (and removed). */
    List<Loaded> load(String instance) {
        List<Loaded> out = new ArrayList<>();
        for (var e : store.records(SECTION + instance).entrySet()) {
            String[] p = e.getKey().split("#", -1);
            try {
                if (p.length != 4 || !(p[0].equals("l1p5") || p[0].equals("l2"))) {
                    throw new IllegalArgumentException("bad name");
                }
                out.add(new Loaded(p[0].equals("l2"), p[1], p[2], Long.parseLong(p[3]), decode(e.getValue())));
            } catch (RuntimeException bad) {
                store.removeRecord(SECTION + instance, e.getKey());
            }
        }
        return out;
    }

    static byte[] encode(Map<String, Reporter.Spec> specs) {
        try {
            ByteArrayOutputStream b = new ByteArrayOutputStream(64);
            DataOutputStream d = new DataOutputStream(b);
            d.writeInt(specs.size());
            for (var e : specs.entrySet()) {
                d.writeUTF(e.getKey());
                d.writeUTF(e.getValue().uri());
            }
            return b.toByteArray();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    static Map<String, Reporter.Spec> decode(byte[] v) {
        try {
            DataInputStream d = new DataInputStream(new ByteArrayInputStream(v));
            int n = d.readInt();
            if (n < 0 || n > 4096) {
                throw new IllegalArgumentException("bad spec count");
            }
            Map<String, Reporter.Spec> out = new LinkedHashMap<>();
            for (int i = 0; i < n; i++) {
                String name = d.readUTF();
                out.put(name, Reporter.Spec.of(d.readUTF()));
            }
            return out;
        } catch (IOException e) {
            throw new IllegalArgumentException("truncated record", e);
        }
    }
}
