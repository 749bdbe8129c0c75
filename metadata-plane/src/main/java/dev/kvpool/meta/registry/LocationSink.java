package dev.kvpool.meta.registry;

import dev.kvpool.api.proto.meta.CacheLocation;
import dev.kvpool.meta.storage.Storage;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;

/**
 * Where a query puts the locations it found: proto messages (gRPC, GetCacheMeta) or JSON bytes written straight
 * from the packed index words (the HTTP hot path), so both transports share one query implementation.
 */
public interface LocationSink {
    void location(Instance inst, Storage st, long key, long a, long b);

    /** A miss placeholder (BATCH_GET, sliding window). */
    void placeholder(Instance inst);

    int count();

    /** Collects CacheLocation messages. */
    final class Protos implements LocationSink {
        private final Set<String> filter;
        private final List<CacheLocation> out = new ArrayList<>();
        private CacheLocation miss;

        public Protos(Set<String> filter) {
            this.filter = filter;
        }

        @Override
        public void location(Instance inst, Storage st, long key, long a, long b) {
            out.add(Locations.render(inst, st, key, a, b, filter));
        }

        @Override
        public void placeholder(Instance inst) {
            out.add(miss == null ? (miss = Locations.placeholder(inst)) : miss);
        }

        @Override
        public int count() {
            return out.size();
        }

        public List<CacheLocation> locations() {
            return out;
        }
    }
}
