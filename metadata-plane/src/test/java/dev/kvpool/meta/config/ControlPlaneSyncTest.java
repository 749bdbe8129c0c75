package dev.kvpool.meta.config;

import static org.junit.jupiter.api.Assertions.assertEquals;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.kvpool.api.proto.meta.InstanceInfo;
import dev.kvpool.meta.registry.ReclaimPolicy;
import dev.kvpool.meta.registry.GroupConfig;
import dev.kvpool.meta.index.StorageKind;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The control plane's REST views as the metadata plane's storage, group and instance definitions. */
class ControlPlaneSyncTest {
    private static final ObjectMapper M = new ObjectMapper();

    @Test
    void groupViewBecomesGroupConfig() throws Exception {
        GroupConfig g = ConfigViews.groupConfig(M.readTree("""
                {"name":"search","quotaBytes":30000000000,"storageTypeQuotas":{"nfs":10000000000,"tair_mem_pool":5},
                 "waterLevels":{"softPercent":80,"hardPercent":95},
                 "eviction":{"policy":"PREFIX_LRU","triggerPeriodSeconds":5,"stepSize":1000,"stepPercentage":10,
                             "ttlSeconds":0,"readerLeaseMs":250},
                 "storageCandidates":["nfs_01","nfs_02"],"maxInstanceCount":7,"quotaGroupName":"qg",
                 "allowAnonymousMeta":true,"userData":"u","version":4,
                 "kvcm":{"name":"search","cache_config":{"data_storage_strategy":"CPS_PREFER_3FS",
                   "reclaim_strategy":{"reclaim_policy":"POLICY_LRU","trigger_strategy":{"used_percentage":0.8,"used_size":77}},
                   "meta_indexer_config":{"max_key_count":5000,"mutex_shard_num":8}},
                   "quota":{"capacity":30000000000,"quota_config":[{"storage_type":"ST_NFS","capacity":10000000000}]}}}"""));
        assertEquals("search", g.name());
        assertEquals(28_500_000_000L, g.capacity(), "enforced at the hard water level");
        assertEquals(Map.of(StorageKind.FILE, 10_000_000_000L, StorageKind.PACE, 5L), g.typeQuotas());
        assertEquals(List.of("nfs_01", "nfs_02"), g.storageCandidates());
        assertEquals(7, g.maxInstanceCount());
        assertEquals("qg", g.quotaGroupName());
        assertEquals(4, g.version());
        assertEquals(5000, g.maxKeyCount());
        assertEquals(8, g.mutexShardNum());
        assertEquals(new GroupConfig.Prefer(StorageKind.HF3FS, false), g.prefer());
        assertEquals(ReclaimPolicy.PREFIX_LRU, g.reclaim().policy());
        assertEquals(0.8, g.reclaim().usedPercentage(), 1e-12);
        assertEquals(77, g.reclaim().usedSize());
        assertEquals(5000, g.reclaim().triggerPeriodMs());
        assertEquals(1000, g.reclaim().stepSize());
        assertEquals(10, g.reclaim().stepPercentage());
        assertEquals(250, g.reclaim().delayBeforeDeleteMs());
    }

    @Test
    void storageAndInstanceViews() throws Exception {
        var s = ConfigViews.storageDef(M.readTree("""
                {"name":"nfs_01","type":"nfs","enabled":false,"spec":{"root_path":"/mnt/kv","key_count_per_file":8}}"""));
        assertEquals(StorageKind.FILE, s.kind());
        assertEquals("/mnt/kv/", s.basePath());
        assertEquals(8, s.keyCountPerFile());
        InstanceInfo i = ConfigViews.instanceInfo(M.readTree("""
                {"instanceId":"i1","group":"search","quotaGroupName":"qg","blockSize":64,"hashScheme":"kvcm",
                 "modelDeployment":{"model_name":"m","dtype":"bf16"},
                 "locationSpecInfos":[{"name":"tp0","size":1024},{"name":"tp1","size":1024}],
                 "locationSpecGroups":[{"name":"b","spec_names":["tp1","tp0"]},{"name":"a","spec_names":["tp0"]}]}"""));
        assertEquals("i1", i.getInstanceId());
        assertEquals("search", i.getInstanceGroupName());
        assertEquals(64, i.getBlockSize());
        assertEquals("m", i.getModelDeployment().getModelName());
        assertEquals(2, i.getLocationSpecInfosCount());
        assertEquals("a", i.getLocationSpecGroups(0).getName(), "normalised like a local registration");
        assertEquals(List.of("tp0", "tp1"), i.getLocationSpecGroups(1).getSpecNamesList());
    }

    @Test
    void eventReportStorageViews() throws Exception {
        var v = M.readTree("""
                {"name":"ev","type":"event_report_l2","enabled":true,"spec":{"heartbeat_timeout_ms":1000,
                 "cleanup_grace_ms":0,"liveness_check_interval_ms":500,"snapshot_min_interval_ms":60000,
                 "snapshot_delta_drain_timeout_ms":"0"}}""");
        assertEquals(true, ConfigViews.isEventReport(v));
        assertEquals(new dev.kvpool.meta.registry.EventReportStorage("ev", true, 1000, 0, 500, 60_000, 0),
                ConfigViews.eventReportStorage(v));
        assertEquals(false, ConfigViews.isEventReport(M.readTree("{\"name\":\"n\",\"type\":\"nfs\"}")));
        GroupConfig g = ConfigViews.groupConfig(M.readTree("""
                {"name":"g","quotaBytes":1000,"storageCandidates":["nfs_01"],"eventReportStorageCandidates":["ev"],
                 "waterLevels":{"softPercent":80,"hardPercent":95},"version":1}"""));
        assertEquals(List.of("ev"), g.eventReportStorageCandidates());
    }
}
