package dev.kvpool.meta.store.redis;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.kvpool.meta.index.Transition;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The scripts' status checks come from {@link Transition}'s table, and no script decides on a status any other
 * way (the compare-and-set scripts carry decisions Java took through the table). What the scripts then do on
 * Redis is {@code RedisStoreContractIT}'s state-machine rows.
 */
class LuaTest {
    /** How a script reads a location's status: bits 2-4 of byte 3 of word A. */
    private static final String STATUS_READ = "/ 4) % 8";

    private static List<Lua.Script> scripts() throws IllegalAccessException {
        List<Lua.Script> out = new ArrayList<>();
        for (Field f : Lua.class.getDeclaredFields()) {
            if (Modifier.isStatic(f.getModifiers()) && f.getType() == Lua.Script.class) {
                f.setAccessible(true);
                out.add((Lua.Script) f.get(null));
            }
        }
        return out;
    }

    @Test
    void conditionsListTheTablesStatuses() {
        assertEquals("(st == 2)", Lua.condition(Transition.FINISH_OK, "st"));
        assertEquals("(st == 2)", Lua.condition(Transition.FINISH_FAILED, "st"));
        assertEquals("(x == 1 or x == 2 or x == 3)", Lua.condition(Transition.MARK_DELETING, "x"));
    }

    @Test
    void theFinishScriptChecksStatusesOnlyThroughTheTable() {
        String body = Lua.FINISH.body();
        assertFalse(body.contains("$"), "no placeholder left");
        assertTrue(body.contains("if " + Lua.condition(Transition.FINISH_OK, "st") + " then"));
        assertTrue(body.contains("elseif " + Lua.condition(Transition.FINISH_FAILED, "st") + " then"));
        assertTrue(body.contains("(" + Transition.FINISH_OK.to().code() + " - st) * 4"));
        assertEquals(1, count(body, STATUS_READ), "the status is read once");
        assertEquals(1, count(body, "local st = math.floor(b3 " + STATUS_READ), "into st, what the checks test");
    }

    @Test
    void noOtherScriptReadsAStatus() throws Exception {
        List<Lua.Script> all = scripts();
        assertTrue(all.size() > 10, "found the scripts: " + all.size());
        for (Lua.Script s : all) {
            if (s != Lua.FINISH) {
                assertEquals(0, count(s.body(), STATUS_READ), s.name());
                assertFalse(s.body().contains("$FINISH"), s.name());
            }
        }
    }

    private static int count(String s, String part) {
        int n = 0;
        for (int i = s.indexOf(part); i >= 0; i = s.indexOf(part, i + 1)) {
            n++;
        }
        return n;
    }
}
