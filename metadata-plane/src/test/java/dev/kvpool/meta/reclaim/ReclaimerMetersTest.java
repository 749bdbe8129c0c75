package dev.kvpool.meta.reclaim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;

import dev.kvpool.meta.events.CacheEvents;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The reclaimer and the event publisher register their own meters, under the names the dashboards read. */
class ReclaimerMetersTest {
    @Test
    void theReclaimerBindsItsGaugesWithTheirFormerNames() {
        Reclaimer r = new Reclaimer(null, null, null, null, () -> false, (i, p, re, k, b, y) -> { },
                new Reclaimer.Settings(262_144, 4096, 10));
        SimpleMeterRegistry meters = new SimpleMeterRegistry();
        r.bindTo(meters);
        for (String name : List.of("kvpool.meta.reclaim.lag.seconds", "kvpool.meta.reclaim.rounds",
                "kvpool.meta.reclaim.scans", "kvpool.meta.reclaim.leftovers.resumed",
                "kvpool.meta.reclaim.orphans.removed", "kvpool.meta.reclaim.orphans.pending.sessions",
                "kvpool.meta.usage.audit.drifts")) {
            assertNotNull(meters.find(name).gauge(), name);
        }
        r.scans.addAndGet(3);
        r.orphansRemoved.addAndGet(2);
        assertEquals(3, meters.get("kvpool.meta.reclaim.scans").gauge().value());
        assertEquals(2, meters.get("kvpool.meta.reclaim.orphans.removed").gauge().value());
        assertEquals(0, meters.get("kvpool.meta.reclaim.lag.seconds").gauge().value());
    }

    @Test
    void theEventPublisherBindsItsCountsEvenWhenOff() {
        SimpleMeterRegistry meters = new SimpleMeterRegistry();
        CacheEvents.OFF.bindTo(meters);
        for (String name : List.of("kvpool.meta.events.published", "kvpool.meta.events.dropped",
                "kvpool.meta.events.failed")) {
            assertEquals(0, meters.get(name).gauge().value(), name);
        }
    }
}
