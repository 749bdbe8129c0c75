package dev.kvpool.meta.kvcm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.kvpool.api.json.ProtoJson;
import dev.kvpool.api.proto.meta.BlockMask;
import dev.kvpool.api.proto.meta.BoolMasksType;
import dev.kvpool.api.proto.meta.CommonResponseHeader;
import dev.kvpool.api.proto.meta.ErrorCode;
import dev.kvpool.api.proto.meta.InstanceInfo;
import dev.kvpool.api.proto.meta.LocationSpecGroup;
import dev.kvpool.api.proto.meta.LocationSpecInfo;
import dev.kvpool.api.proto.meta.ModelDeployment;
import dev.kvpool.api.proto.meta.StartWriteCacheResponse;
import dev.kvpool.api.proto.meta.Status;
import dev.kvpool.meta.index.Loc;
import dev.kvpool.meta.store.embedded.EmbeddedStore;
import dev.kvpool.meta.registry.Instance;
import dev.kvpool.meta.slots.SlotAllocator;
import dev.kvpool.meta.storage.Storage;
import dev.kvpool.meta.index.StorageKind;
import dev.kvpool.meta.write.WritePath.StartOutcome;
import java.nio.charset.StandardCharsets;
import java.util.Random;
import org.junit.jupiter.api.Test;

/** StartWriteCache over HTTP writes its locations straight from the words: the bytes must equal the printed message. */
class StartJsonTest {
    private static final ObjectMapper JSON = new ObjectMapper();

    @Test
    void directAnswerEqualsThePrintedMessage() {
        InstanceInfo info = InstanceInfo.newBuilder().setInstanceId("inst\"1").setInstanceGroupName("g").setBlockSize(16)
                .addLocationSpecInfos(LocationSpecInfo.newBuilder().setName("tp0").setSize(4096))
                .addLocationSpecInfos(LocationSpecInfo.newBuilder().setName("tp1").setSize(1 << 20))
                .addLocationSpecGroups(LocationSpecGroup.newBuilder().setName("one").addSpecNames("tp1"))
                .setModelDeployment(ModelDeployment.newBuilder().setModelName("m").setDtype("bf16")).build();
        Storage st = new Storage("nfs_01", StorageKind.FILE, 1, "/tmp/nfs/", 8, JSON.createObjectNode(), true);
        try (EmbeddedStore store = new EmbeddedStore(EmbeddedStore.Options.memory(4))) {
            Instance inst = new Instance(info, store.index(info.getInstanceId()));
            Random r = new Random(11);
            for (int n : new int[] {0, 1, 300}) {
                long[] keys = new long[n], a = new long[n], b = new long[n];
                BoolMasksType.Builder mask = BoolMasksType.newBuilder();
                for (int i = 0; i < n; i++) {
                    keys[i] = r.nextLong();
                    a[i] = Loc.a(Loc.randomId(r), Loc.WRITING, st.number, r.nextInt(2));
                    b[i] = SlotAllocator.address(r.nextInt(1 << 20), r.nextInt(st.keyCountPerFile));
                    mask.addValues(r.nextBoolean());
                }
                StartOutcome o = n == 0 ? StartOutcome.empty("s-empty", KvcmMasks.of(BlockMask.newBuilder().setOffset(3).build()))
                        : new StartOutcome("s-" + n, KvcmMasks.of(BlockMask.newBuilder().setBoolMasks(mask).build()), inst, st, keys,
                        a, b);
                StartWriteCacheResponse.Builder answer = StartWriteCacheResponse.newBuilder()
                        .setHeader(CommonResponseHeader.newBuilder().setRequestId("trace \u00e9\n" + n)
                                .setStatus(Status.newBuilder().setCode(ErrorCode.OK).setMessage("started")))
                        .setWriteSessionId(o.sessionId()).setBlockMask(KvcmMasks.proto(o.mask()));
                String printed = ProtoJson.printToString(answer.clone().addAllLocations(o.locations()).build());
                byte[] direct = KvcmMeta.startJson(answer, o);
                assertNotNull(direct, "written from the words, not printed");
                assertEquals(printed, new String(direct, StandardCharsets.UTF_8), n + " locations");
            }
        }
    }
}
