package dev.kvpool.meta.debug;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.kvpool.api.proto.debug.FaultTriggerStrategy;
import dev.kvpool.api.proto.debug.FaultType;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.junit.jupiter.api.Test;

/** The fault table's rules (kvcm-compat §3.16), without a server. */
class FaultTableTest {
    private final FaultTable t = new FaultTable();

    @Test
    void alwaysFailsEveryCallOfThatApiOnly() {
        t.inject("StartWriteCache", FaultType.FT_INTERNAL_ERROR, FaultTriggerStrategy.ALWAYS, 0);
        assertTrue(t.fires("StartWriteCache", "t1"));
        assertTrue(t.fires("StartWriteCache", ""));
        assertTrue(t.fires("StartWriteCache", "x_3"));
        assertFalse(t.fires("FinishWriteCache", "t1"));
        assertFalse(t.fires("startWriteCache", "t1"), "the api name is exact (the RPC name)");
    }

    @Test
    void onceMatchesTheIntegerAfterTheLastUnderscore() {
        t.inject("GetCacheLocation", FaultType.FT_INTERNAL_ERROR, FaultTriggerStrategy.ONCE, 3);
        assertTrue(t.fires("GetCacheLocation", "req_3"));
        assertTrue(t.fires("GetCacheLocation", "a_b_3"));
        assertTrue(t.fires("GetCacheLocation", "_3"));
        assertTrue(t.fires("GetCacheLocation", "req_3"), "the fault stays: every matching call fails");
        assertFalse(t.fires("GetCacheLocation", "req_4"));
        assertFalse(t.fires("GetCacheLocation", "req_3_4"));
        assertFalse(t.fires("GetCacheLocation", "req3"), "no '_': no call number");
        assertFalse(t.fires("GetCacheLocation", "3"));
        assertFalse(t.fires("GetCacheLocation", "req_"));
        assertFalse(t.fires("GetCacheLocation", "req_x3"));
        assertFalse(t.fires("GetCacheLocation", "req_99999999999999999999"));
        assertFalse(t.fires("GetCacheLocation", null));
        t.inject("GetCacheLocation", FaultType.FT_INTERNAL_ERROR, FaultTriggerStrategy.ONCE, -2);
        assertTrue(t.fires("GetCacheLocation", "r_-2"));
        assertFalse(t.fires("GetCacheLocation", "r_3"), "inject overwrites the fault of that name");
    }

    @Test
    void callNumber() {
        assertEquals(7, FaultTable.callNumber("trace_7"));
        assertEquals(Long.MIN_VALUE, FaultTable.callNumber("trace_7x"));
        assertEquals(Long.MIN_VALUE, FaultTable.callNumber("trace_2147483648"));
        assertEquals(Integer.MAX_VALUE, FaultTable.callNumber("t_2147483647"));
    }

    @Test
    void rulesOfInjectAndRemove() {
        assertThrows(FaultTable.Invalid.class,
                () -> t.inject("", FaultType.FT_INTERNAL_ERROR, FaultTriggerStrategy.ALWAYS, 0));
        assertThrows(FaultTable.Invalid.class,
                () -> t.inject("A", FaultType.UNRECOGNIZED, FaultTriggerStrategy.ALWAYS, 0));
        assertThrows(FaultTable.Invalid.class,
                () -> t.inject("A", FaultType.FT_INTERNAL_ERROR, FaultTriggerStrategy.UNRECOGNIZED, 0));
        assertThrows(FaultTable.Invalid.class,
                () -> t.inject("A\nB", FaultType.FT_INTERNAL_ERROR, FaultTriggerStrategy.ALWAYS, 0));
        assertThrows(FaultTable.Invalid.class, () -> t.inject("x".repeat(FaultTable.MAX_API_NAME + 1),
                FaultType.FT_INTERNAL_ERROR, FaultTriggerStrategy.ALWAYS, 0));
        assertTrue(t.snapshot().isEmpty(), "a refused inject stores nothing");
        assertThrows(FaultTable.Invalid.class, () -> t.remove("StartWriteCache"));
        assertThrows(FaultTable.Invalid.class, () -> t.remove(""));
        t.inject("StartWriteCache", FaultType.FT_INTERNAL_ERROR, FaultTriggerStrategy.ALWAYS, 0);
        t.remove("StartWriteCache");
        assertFalse(t.fires("StartWriteCache", "t"));
        assertThrows(FaultTable.Invalid.class, () -> t.remove("StartWriteCache"));
    }

    @Test
    void boundedNumberOfFaults() {
        for (int i = 0; i < FaultTable.MAX_FAULTS; i++) {
            t.inject("Api" + i, FaultType.FT_INTERNAL_ERROR, FaultTriggerStrategy.ALWAYS, 0);
        }
        assertThrows(FaultTable.Invalid.class,
                () -> t.inject("OneMore", FaultType.FT_INTERNAL_ERROR, FaultTriggerStrategy.ALWAYS, 0));
        // overwriting a stored name is still allowed when full
        t.inject("Api0", FaultType.FT_INTERNAL_ERROR, FaultTriggerStrategy.ONCE, 1);
        assertEquals(FaultTable.MAX_FAULTS, t.snapshot().size());
        t.clear();
        assertTrue(t.snapshot().isEmpty());
        assertFalse(t.fires("Api1", "t"));
    }

    @Test
    void countsInjectedAndFired() {
        SimpleMeterRegistry m = new SimpleMeterRegistry();
        t.meters(m);
        t.inject("FinishWriteCache", FaultType.FT_INTERNAL_ERROR, FaultTriggerStrategy.ALWAYS, 0);
        t.inject("NotAnRpc", FaultType.FT_INTERNAL_ERROR, FaultTriggerStrategy.ALWAYS, 0);
        t.fires("FinishWriteCache", "a");
        t.fires("FinishWriteCache", "b");
        t.fires("NotAnRpc", "c"); // not a consulted RPC: no meter per arbitrary name
        assertEquals(2.0, m.get("kvpool.meta.debug.faults.injected").counter().count());
        assertEquals(2.0, m.get("kvpool.meta.debug.faults.fired").tag("api", "FinishWriteCache").counter().count());
        assertEquals(1, m.find("kvpool.meta.debug.faults.fired").counters().size());
    }
}
