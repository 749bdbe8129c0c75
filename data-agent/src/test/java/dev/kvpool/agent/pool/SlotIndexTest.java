package dev.kvpool.agent.pool;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;

/** The primitive index against a LinkedHashMap in access order, on random adds, removals, touches and lookups. */
class SlotIndexTest {
    @Test
    void behavesLikeAnAccessOrderedMap() {
        for (int slots : new int[] {1, 3, 64, 1000}) {
            for (long seed = 0; seed < 5; seed++) {
                check(slots, seed);
            }
        }
    }

    private static void check(int slots, long seed) {
        Random r = new Random(seed);
        SlotIndex idx = new SlotIndex(slots);
        Map<Long, Integer> model = new LinkedHashMap<>(16, 0.75f, true); // key -> slot
        ArrayDeque<Integer> free = new ArrayDeque<>();
        for (int s = 0; s < slots; s++) {
            free.add(s);
        }
        // keys from a small range (collisions and re-adds) with large gaps (sequential and hashed alike)
        for (int step = 0; step < 20_000; step++) {
            long key = (r.nextInt(slots * 2 + 1) - slots) * (r.nextBoolean() ? 1L : 0x10000000001L);
            int op = r.nextInt(4);
            Integer s = model.get(key); // an access in the model, as find + touch in the index
            int found = idx.find(key);
            assertEquals(s == null ? -1 : s, found, "find " + key);
            if (s != null) {
                idx.touch(found);
                if (op == 0) {
                    idx.remove(found);
                    model.remove(key);
                    free.add(found);
                }
            } else if (op != 0 && !free.isEmpty()) {
                int slot = free.poll();
                idx.add(key, slot, (int) key * 31);
                model.put(key, slot);
            }
            if (step % 97 == 0 || slots < 4) {
                List<Long> order = new ArrayList<>();
                for (int g = idx.leastRecent(); g >= 0; g = idx.moreRecent(g)) {
                    order.add(idx.key(g));
                    assertEquals((int) idx.key(g) * 31, idx.crc(g));
                }
                assertEquals(new ArrayList<>(model.keySet()), order, "LRU order, seed " + seed + " step " + step);
                assertEquals(model.size(), idx.size());
            }
        }
    }
}
