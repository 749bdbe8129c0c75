package dev.kvpool.meta.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.kvpool.api.proto.meta.*;
import dev.kvpool.meta.registry.Registry;
import dev.kvpool.meta.support.KvcmTestBase;
import dev.kvpool.meta.support.KvcmTestProfile;
import dev.kvpool.meta.support.MetaApi;
import dev.kvpool.meta.support.Transport;
import io.quarkus.test.junit.QuarkusTest;
import io.quarkus.test.junit.TestProfile;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * A group whose storage candidates name storages that do not exist yet (the control plane stores KVCM groups as
 * given, §3.11). The configuration arrives as ControlPlaneSync applies it — the control plane's REST views converted by
 * {@link ConfigViews#groupConfig} / {@link ConfigViews#storageDef} and put into the running registry — and
 * the calls go through the KVCM API (HTTP and gRPC). A missing candidate is never placed on; a group with no existing
 * candidate answers INTERNAL_ERROR (§3.9.2 step 7, "no candidate → fail") naming what is missing; the storage, once
 * it arrives, is used by the next write without a restart, in the group's list order.
 */
@QuarkusTest
@TestProfile(KvcmTestProfile.class)
class PendingCandidatesTest extends KvcmTestBase {
    private static final ObjectMapper JSON = new ObjectMapper();

    static String fresh(String prefix) {
        return prefix + "_" + UUID.randomUUID().toString().substring(0, 8);
    }

    /** The control plane's GroupView of a REST-created group (as events and snapshots carry it). */
    static JsonNode groupView(String name, String... candidates) throws Exception {
        return JSON.readTree("""
                {"name":"%s","quotaBytes":1000000000,"storageTypeQuotas":{},
                 "waterLevels":{"softPercent":80,"hardPercent":95},
                 "eviction":{"policy":"LRU","triggerPeriodSeconds":5,"stepSize":1000,"stepPercentage":10,
                   "ttlSeconds":0,"readerLeaseMs":1000},
                 "storageCandidates":%s,"maxInstanceCount":0,"quotaGroupName":"%s","version":1}"""
                .formatted(name, JSON.writeValueAsString(List.of(candidates)), name));
    }

    static JsonNode storageView(String name) throws Exception {
        return JSON.readTree("""
                {"name":"%s","type":"nfs","enabled":true,"spec":{"root_path":"/tmp/%s/","key_count_per_file":1}}"""
                .formatted(name, name));
    }

    static String uri(StartWriteCacheResponse r, int i) {
        return r.getLocations(i).getLocationSpecs(0).getUri();
    }

    void finishAll(MetaApi a, String inst, StartWriteCacheResponse s) {
        assertOk(finish(a, inst, s.getWriteSessionId(), bools(filled(s.getLocationsCount(), true))));
    }

    @ParameterizedTest
    @EnumSource(Transport.class)
    void missingCandidatesAreSkippedUntilTheStorageArrives(Transport t) throws Exception {
        MetaApi a = api(t);
        Registry reg = runtime.registry();
        String later = fresh("pend_later"), first = fresh("pend_first");
        String all = uid("pend-all"), mixed = uid("pend-mixed");
        reg.putGroup(ConfigViews.groupConfig(groupView(all, later)));
        reg.putGroup(ConfigViews.groupConfig(groupView(mixed, first, "nfs_01")));

        // registration into a group none of whose candidates exists: accepted (KVCM does), no storage_configs yet
        String ia = uid("pend-a-" + t.name().toLowerCase());
        RegisterInstanceResponse r = a.register(reg(ia).setInstanceGroup(all).build());
        assertOk(r);
        assertEquals("[]", r.getStorageConfigs());
        String im = registered(a, reg(uid("pend-m-" + t.name().toLowerCase())).setInstanceGroup(mixed));

        // no candidate exists: §3.9.2 "no candidate → fail", INTERNAL_ERROR, naming the storage that is missing
        StartWriteCacheResponse none = a.start(startReq(ia, rndKeys(2)).build());
        assertCode(ErrorCode.INTERNAL_ERROR, none);
        String why = none.getHeader().getStatus().getMessage();
        assertTrue(why.contains(all) && why.contains(later) && why.contains("yet"), why);

        // a missing candidate first in the list is skipped: every block goes to the next one that exists
        for (int round = 0; round < 3; round++) {
            StartWriteCacheResponse s = start(a, im, rndKeys(4));
            for (int i = 0; i < s.getLocationsCount(); i++) {
                assertTrue(uri(s, i).startsWith("file://nfs_01/"), uri(s, i));
            }
            finishAll(a, im, s);
        }

        // the storages arrive (as a storage event or a resync applies them): the next writes use them, no restart
        reg.putStorage(ConfigViews.storageDef(storageView(later)), true);
        reg.putStorage(ConfigViews.storageDef(storageView(first)), true);
        StartWriteCacheResponse s = start(a, ia, rndKeys(2));
        assertTrue(uri(s, 0).startsWith("file://" + later + "/"), uri(s, 0));
        finishAll(a, ia, s);
        s = start(a, im, rndKeys(2));
        assertTrue(uri(s, 0).startsWith("file://" + first + "/"), "list order: the first candidate now exists: " + uri(s, 0));
        finishAll(a, im, s);
        // a newly registered instance now sees it in storage_configs
        r = a.register(reg(uid("pend-b-" + t.name().toLowerCase())).setInstanceGroup(all).build());
        assertOk(r);
        assertTrue(r.getStorageConfigs().contains("\"" + later + "\""), r.getStorageConfigs());

        // deleted again (a storage delete event disables it here): writes stop using it at once
        reg.disableStorage(later);
        assertCode(ErrorCode.INTERNAL_ERROR, a.start(startReq(ia, rndKeys(2)).build()));
    }
}
