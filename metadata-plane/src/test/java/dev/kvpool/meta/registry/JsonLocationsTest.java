package dev.kvpool.meta.registry;

import static org.junit.jupiter.api.Assertions.assertEquals;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.kvpool.api.json.ProtoJson;
import dev.kvpool.api.proto.meta.GetCacheLocationResponse;
import dev.kvpool.api.proto.meta.InstanceInfo;
import dev.kvpool.api.proto.meta.LocationSpecGroup;
import dev.kvpool.api.proto.meta.LocationSpecInfo;
import dev.kvpool.api.proto.meta.ModelDeployment;
import dev.kvpool.meta.index.Loc;
import dev.kvpool.meta.store.embedded.EmbeddedStore;
import dev.kvpool.meta.slots.SlotAllocator;
import dev.kvpool.meta.storage.Storage;
import dev.kvpool.meta.index.StorageKind;
import java.nio.charset.StandardCharsets;
import java.util.Random;
import java.util.Set;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/** The HTTP hot path writes locations directly; its bytes must equal printing the messages the proto path builds. */
class JsonLocationsTest {
    private static final ObjectMapper JSON = new ObjectMapper();

    static Stream<Storage> storages() {
        return Stream.of(
                new Storage("nfs_01", StorageKind.FILE, 1, "/tmp/nfs/", 8, JSON.createObjectNode(), true),
                new Storage("nfs_one", StorageKind.FILE, 2, "/data/kv \"q\"/", 1, JSON.createObjectNode(), true),
                new Storage("3fs", StorageKind.HF3FS, 3, Storage.hf3fsBase("/mnt/3fs", "kv"), 64, JSON.createObjectNode(), true),
                new Storage("mc1", StorageKind.MOONCAKE, 4, "", 1, JSON.createObjectNode(), true));
    }

    @ParameterizedTest
    @MethodSource("storages")
    void directJsonEqualsPrintedMessages(Storage st) {
        InstanceInfo info = InstanceInfo.newBuilder().setInstanceId("inst<&=>'1").setInstanceGroupName("g").setBlockSize(16)
                .addLocationSpecInfos(LocationSpecInfo.newBuilder().setName("tp0").setSize(1024))
                .addLocationSpecInfos(LocationSpecInfo.newBuilder().setName("tp1").setSize(1 << 20))
                .addLocationSpecInfos(LocationSpecInfo.newBuilder().setName("tp\u00e92").setSize(7))
                .addLocationSpecGroups(LocationSpecGroup.newBuilder().setName("odd").addSpecNames("tp0").addSpecNames("tp\u00e92"))
                .setModelDeployment(ModelDeployment.newBuilder().setModelName("m").setDtype("bf16")).build();
        try (EmbeddedStore store = new EmbeddedStore(EmbeddedStore.Options.memory(4))) {
            Instance inst = new Instance(info, store.index(info.getInstanceId()));
            Random r = new Random(7);
            for (Set<String> filter : java.util.Arrays.<Set<String>>asList(null, Set.of("tp1"), Set.of("none"))) {
                LocationSink.Protos protos = new LocationSink.Protos(filter);
                JsonLocations json = new JsonLocations(filter, 4);
                for (int i = 0; i < 200; i++) {
                    long key = r.nextLong();
                    long a = Loc.a(Loc.randomId(r), Loc.SERVING, st.number, r.nextInt(2));
                    long b = SlotAllocator.address(r.nextInt(1 << 20), r.nextInt(st.keyCountPerFile));
                    if (i % 17 == 0) {
                        protos.placeholder(inst);
                        json.placeholder(inst);
                    }
                    protos.location(inst, st, key, a, b);
                    json.location(inst, st, key, a, b);
                }
                String printed = ProtoJson.printToString(GetCacheLocationResponse.newBuilder()
                        .addAllLocations(protos.locations()).build());
                String direct = "{\"locations\":" + new String(json.finish(), StandardCharsets.UTF_8) + "}";
                assertEquals(printed, direct, "storage " + st.name + ", filter " + filter);
                assertEquals(protos.count(), json.count());
            }
        }
    }
}
