package dev.kvpool.meta.index;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;

/** A canonical text form of everything a store holds, so two stores (before and after a restart) compare. */
public final class StoreDump {
    private StoreDump() {
    }

    public static String of(IndexStore store, Collection<String> recordSections) {
        StringBuilder sb = new StringBuilder();
        for (String inst : new TreeSet<>(store.instanceIds())) {
            sb.append(of(store, store.existing(inst)));
        }
        for (String section : new TreeSet<>(recordSections)) {
            sb.append("records ").append(section).append('\n');
            for (Map.Entry<String, byte[]> e : store.records(section).entrySet()) {
                sb.append("  ").append(e.getKey()).append(" = ").append(HexFormat.of().formatHex(e.getValue()))
                        .append('\n');
            }
        }
        return sb.toString();
    }

    public static String of(IndexStore store, InstanceIndex idx) {
        StringBuilder sb = new StringBuilder();
        sb.append("instance ").append(idx.instanceId()).append(" keyCount=").append(idx.keyCount()).append('\n');
        TreeMap<Long, String> blocks = new TreeMap<>();
        idx.forEach(b -> blocks.put(b.key(), block(b)));
        if (blocks.size() != idx.keyCount()) {
            sb.append("  !! forEach saw ").append(blocks.size()).append(" keys\n");
        }
        blocks.values().forEach(s -> sb.append("  ").append(s).append('\n'));
        List<WriteSession> sessions = new ArrayList<>(idx.sessions());
        sessions.sort((x, y) -> x.id().compareTo(y.id()));
        for (WriteSession s : sessions) {
            sb.append("  session ").append(s.id()).append(" inst=").append(s.instanceId())
                    .append(" owner=").append(store.sessionOwner(s.id()))
                    .append(" deadline=").append(s.deadlineMs())
                    .append(" keys=").append(Arrays.toString(s.keys()))
                    .append(" ids=").append(Arrays.toString(s.locIds())).append('\n');
        }
        return sb.toString();
    }

    public static String block(Block b) {
        StringBuilder sb = new StringBuilder();
        sb.append(b.key()).append(" meta=").append(b.writeSec()).append('/').append(b.accessSec()).append(" [");
        for (int i = 0; i < b.size(); i++) {
            long a = b.a(i);
            sb.append(i == 0 ? "" : ", ").append(Loc.idString(a)).append(' ')
                    .append(Loc.statusName(Loc.status(a))).append(" st").append(Loc.storage(a))
                    .append(" g").append(Loc.specGroup(a)).append(" b=").append(Long.toHexString(b.b(i)));
        }
        return sb.append(']').toString();
    }
}
