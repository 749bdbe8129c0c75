package dev.kvpool.meta.registry;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.kvpool.api.proto.meta.CacheLocation;
import dev.kvpool.api.proto.meta.InstanceInfo;
import dev.kvpool.api.proto.meta.LocationSpec;
import dev.kvpool.api.proto.meta.LocationSpecGroup;
import dev.kvpool.api.proto.meta.LocationSpecInfo;
import dev.kvpool.api.proto.meta.ModelDeployment;
import dev.kvpool.api.proto.meta.StorageType;
import dev.kvpool.meta.index.Loc;
import dev.kvpool.meta.slots.SlotAllocator;
import dev.kvpool.meta.storage.Storage;
import dev.kvpool.meta.index.StorageKind;
import java.net.URI;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** §3.8 URI formats as Locations renders them. */
class LocationsTest {
    private static final ObjectMapper JSON = new ObjectMapper();

    private static Instance instance(String id, Object... specs) {
        InstanceInfo.Builder b = InstanceInfo.newBuilder().setInstanceId(id).setInstanceGroupName("default").setBlockSize(4)
                .setModelDeployment(ModelDeployment.newBuilder().setModelName("m").setDtype("d"));
        for (int i = 0; i < specs.length; i += 2) {
            b.addLocationSpecInfos(LocationSpecInfo.newBuilder().setName((String) specs[i]).setSize((Integer) specs[i + 1]));
        }
        b.addLocationSpecGroups(LocationSpecGroup.newBuilder().setName("g").addSpecNames((String) specs[specs.length - 2]));
        return new Instance(b.build(), null);
    }

    private static Storage file(String name, String root, int kcpf) {
        return new Storage(name, StorageKind.FILE, 1, Storage.normaliseRoot(root), kcpf, JSON.createObjectNode(), true);
    }

    private static long a(int storage, int specGroup) {
        return Loc.a(12345, Loc.WRITING, storage, specGroup);
    }

    private static List<String> uris(CacheLocation l) {
        List<String> out = new ArrayList<>();
        for (LocationSpec s : l.getLocationSpecsList()) {
            out.add(s.getUri());
        }
        return out;
    }

    @Test
    void fileWithSeveralKeysPerFileCarriesBlkidThenSize() {
        Instance inst = instance("instance1", "tp0", 1024, "tp1", 2048);
        Storage st = file("nfs_01", "/tmp/nfs/", 8);
        CacheLocation l = Locations.render(inst, st, 123, a(1, 0), SlotAllocator.address(2, 5), null);
        assertEquals(StorageType.ST_NFS, l.getType());
        assertEquals(2, l.getSpecSize());
        assertEquals(List.of("file://nfs_01/tmp/nfs/instance1/tp0/slab_00000002?blkid=5&size=1024",
                "file://nfs_01/tmp/nfs/instance1/tp1/slab_00000002?blkid=5&size=2048"), uris(l));
        // blkid is present even for slot 0
        assertTrue(uris(Locations.render(inst, st, 1, a(1, 0), SlotAllocator.address(0, 0), null)).get(0)
                .endsWith("?blkid=0&size=1024"));
        URI u = URI.create(uris(l).get(0));
        assertEquals("file", u.getScheme());
        // "nfs_01" is no RFC 2396 host name, so java.net.URI sees it only as the authority
        assertEquals("nfs_01", u.getRawAuthority());
        assertFalse(u.getRawAuthority().contains(":") || u.getRawAuthority().contains("@"), "no port, no user info");
        assertEquals("/tmp/nfs/instance1/tp0/slab_00000002", u.getRawPath());
        assertEquals("blkid=5&size=1024", u.getRawQuery());
    }

    @Test
    void fileWithOneKeyPerFileHasNoBlkid() {
        Instance inst = instance("i", "tp0", 64);
        for (int kcpf : new int[] {1, 0, -3}) {
            Storage st = file("nfs_02", "/data/kv", kcpf);
            String uri = uris(Locations.render(inst, st, 9, a(1, 0), SlotAllocator.address(7, 0), null)).get(0);
            assertEquals("file://nfs_02/data/kv/i/tp0/slab_00000007?size=64", uri);
            assertFalse(uri.contains("blkid"));
        }
    }

    @Test
    void rootPathIsNormalisedToOneSlash() {
        assertEquals("/tmp/1/", Storage.normaliseRoot("/tmp/1"));
        assertEquals("/tmp/1/", Storage.normaliseRoot("/tmp/1//"));
        Instance inst = instance("inst", "tp0", 8);
        assertEquals("file://s/tmp/1/inst/tp0/slab_00000000?blkid=1&size=8",
                uris(Locations.render(inst, file("s", "/tmp/1", 4), 1, a(1, 0), SlotAllocator.address(0, 1), null)).get(0));
    }

    @Test
    void mooncakeUsesTheKeyAsObjectName() {
        Instance inst = instance("instance1", "tp0", 1024);
        Storage mc = new Storage("mc1", StorageKind.MOONCAKE, 3, "", 1, JSON.createObjectNode(), true);
        CacheLocation l = Locations.render(inst, mc, 123, a(3, 0), 0, null);
        assertEquals(StorageType.ST_MOONCAKE, l.getType());
        assertEquals(List.of("mooncake://mc1/?key=instance1/tp0/7b&size=1024"), uris(l));
        assertEquals(List.of("mooncake://mc1/?key=instance1/tp0/ffffffffffffffff&size=1024"),
                uris(Locations.render(inst, mc, -1, a(3, 0), 0, null)));
        assertEquals(List.of("mooncake://mc1/?key=instance1/tp0/a4c25c0c9c1aac10&size=1024"),
                uris(Locations.render(inst, mc, -6574591296779146224L, a(3, 0), 0, null)));
        assertTrue(Locations.localFiles(inst, mc, 123, 0, 0).isEmpty());
    }

    @Test
    void hf3fsPathsAreAbsoluteUnderTheMount() {
        Instance inst = instance("inst", "tp0", 100);
        Storage h = new Storage("h1", StorageKind.HF3FS, 2, Storage.hf3fsBase("/mnt/3fs", "kv/cache"), 4,
                JSON.createObjectNode(), true);
        assertEquals(List.of("hf3fs://h1/mnt/3fs/kv/cache/inst/tp0/slab_00000001?blkid=3&size=100"),
                uris(Locations.render(inst, h, 5, a(2, 0), SlotAllocator.address(1, 3), null)));
        // a root_dir starting with / replaces the mount point, as Path.resolve does
        assertEquals("/other/root", Storage.hf3fsBase("/mnt/3fs", "/other/root"));
        assertEquals(List.of(Path.of("/mnt/3fs/kv/cache/inst/tp0/slab_00000001")),
                Locations.localFiles(inst, h, 5, SlotAllocator.address(1, 3), 0));
    }

    @Test
    void fileNumbersAreReadBackOnlyFromNamesThePlaneGives() {
        Instance inst = instance("inst", "tp0", 100, "tp1", 100);
        Storage st = file("s", "/tmp/1", 4);
        assertEquals(List.of(Path.of("/tmp/1/inst/tp0"), Path.of("/tmp/1/inst/tp1")), Locations.fileDirs(inst, st));
        for (long f : new long[] {0, 7, 0xabcdef, 0x12345678L, 0xff_ffff_ffffL}) {
            Path p = Locations.localFiles(inst, st, 1, SlotAllocator.address(f, 3), 0).get(0);
            assertEquals(f, Locations.fileNumber(p.getFileName().toString()));
            assertEquals(f, Locations.fileNumber(dev.kvpool.api.storage.SlabFiles.checksums(p).getFileName().toString()));
        }
        for (String other : new String[] {"slab_", "slab_0000000", "slab_0000000A", "slab_0000000g", "slab_00000001.tmp",
                "slab_00000001.crc.bak", "xslab_00000001", "notes.txt", "slab_-0000001", "slab_000000000000000"}) {
            assertEquals(-1, Locations.fileNumber(other), other);
        }
        assertTrue(Locations.fileDirs(inst, new Storage("mc1", StorageKind.MOONCAKE, 3, "", 1,
                JSON.createObjectNode(), true)).isEmpty());
    }

    @Test
    void specGroupsAndFilters() {
        Instance inst = instance("i", "tp0", 10, "tp1", 20, "tp2", 30); // group "g" = {tp2}
        Storage st = file("n", "/r/", 8);
        CacheLocation g = Locations.render(inst, st, 1, a(1, 1), 0, null);
        assertEquals(1, g.getSpecSize());
        assertEquals(List.of("file://n/r/i/tp2/slab_00000000?blkid=0&size=30"), uris(g));
        CacheLocation filtered = Locations.render(inst, st, 1, a(1, 0), 0, Set.of("tp1"));
        assertEquals(List.of("file://n/r/i/tp1/slab_00000000?blkid=0&size=20"), uris(filtered));
        assertEquals(3, filtered.getSpecSize(), "spec_size is not adjusted by the filter (baseline)");
        assertEquals(List.of(Path.of("/r/i/tp0/slab_00000000"), Path.of("/r/i/tp1/slab_00000000"),
                Path.of("/r/i/tp2/slab_00000000")), Locations.localFiles(inst, st, 1, 0, 0));
    }

    @Test
    void placeholderHasEveryRegisteredSpecWithAnEmptyUri() {
        Instance inst = instance("i", "tp0", 10, "tp1", 20);
        CacheLocation p = Locations.placeholder(inst);
        assertEquals(StorageType.ST_UNSPECIFIED, p.getType());
        assertEquals(2, p.getSpecSize());
        assertEquals(List.of("tp0", "tp1"), p.getLocationSpecsList().stream().map(LocationSpec::getName).toList());
        assertEquals(List.of("", ""), uris(p));
    }

    @Test
    void storageConfigEntryKeysInOrder() {
        Storage st = new Storage("nfs_01", StorageKind.FILE, 1, "/tmp/nfs/", 8,
                JSON.createObjectNode().put("root_path", "/tmp/nfs/").put("key_count_per_file", 8), true);
        assertEquals("{\"type\":\"file\",\"is_available\":true,\"global_unique_name\":\"nfs_01\","
                + "\"storage_spec\":{\"root_path\":\"/tmp/nfs/\",\"key_count_per_file\":8}}", st.toStorageConfigJson().toString());
        st.setAvailable(false);
        assertTrue(st.toStorageConfigJson().toString().contains("\"is_available\":false"));
    }
    @Test
    void slabNamesAreEightHexDigitsAtLeastAndReadBack() {
        long[] files = {0, 1, 0xf, 0x10, 0xabc, 0xfffffff, 0x10000000, 0xffffffffL, 0x100000000L, 0xffffffffffL};
        for (long f : files) {
            String name = Locations.slabName(f);
            assertEquals(String.format("slab_%08x", f), name, "file " + f);
            assertEquals(f, Locations.fileNumber(name), name);
        }
        var rnd = new java.util.Random(7);
        for (int i = 0; i < 10_000; i++) {
            long f = rnd.nextLong() >>> (24 + rnd.nextInt(40)); // file numbers below 2^40, every width
            assertEquals(String.format("slab_%08x", f), Locations.slabName(f));
        }
    }
}
