package dev.kvpool.meta.quota;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.kvpool.meta.index.StorageKind;
import org.junit.jupiter.api.Test;

/** The in-process ledger at the edges of a long: reservations compare what is left, releases never go below 0. */
class QuotaLedgerTest {

    @Test
    void aHugeReservationNeverWrapsPastTheCapacity() {
        QuotaLedger l = QuotaLedger.inMemory();
        assertTrue(l.tryReserve("g", 1000, 10_000, StorageKind.FILE, 1000, null));
        // total + add would wrap to a negative number and pass a "total + add > capacity" check
        assertFalse(l.tryReserve("g", Long.MAX_VALUE, 10_000, StorageKind.FILE, 1, null));
        assertFalse(l.tryReserve("g", Long.MAX_VALUE - 500, Long.MAX_VALUE, StorageKind.FILE, 1, null));
        assertFalse(l.tryReserve("g", 1, 10_000, StorageKind.FILE, Long.MAX_VALUE, 5_000L), "per-type quota");
        assertEquals(1000, l.usage("g").total());
        assertEquals(1000, l.usage("g").byType(StorageKind.FILE));
    }

    @Test
    void aNegativeReservationIsRefused() {
        QuotaLedger l = QuotaLedger.inMemory();
        assertThrows(IllegalArgumentException.class, () -> l.tryReserve("g", -1000, 10_000, StorageKind.FILE, 0, null));
        assertThrows(IllegalArgumentException.class, () -> l.tryReserve("g", 0, 10_000, StorageKind.FILE, -5, null));
        assertEquals(0, l.usage("g").total());
    }

    @Test
    void aReleaseBelowZeroIsClampedAndCountedAsDrift() {
        QuotaLedger l = QuotaLedger.inMemory();
        l.add("g", 100, StorageKind.FILE, 100);
        l.add("g", -60, StorageKind.FILE, -60);
        assertEquals(0, l.drift().events(), "a release of what was counted is no drift");
        l.add("g", -100, StorageKind.FILE, -100);
        assertEquals(0, l.usage("g").total(), "never below zero");
        assertEquals(0, l.usage("g").byType(StorageKind.FILE));
        assertEquals(1, l.drift().events());
        assertEquals(60, l.drift().bytes());
        l.add("g", Long.MAX_VALUE, null, 0);
        assertThrows(ArithmeticException.class, () -> l.add("g", 1, null, 0), "an add past Long.MAX_VALUE fails loudly");
        assertEquals(Long.MAX_VALUE, l.usage("g").total());
    }
}
