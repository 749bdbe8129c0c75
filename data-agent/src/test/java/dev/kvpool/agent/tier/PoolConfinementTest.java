package dev.kvpool.agent.tier;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.kvpool.agent.TestBlocks;
import dev.kvpool.api.client.KvcmHttpClient;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The global-pool tier against a metadata plane that hands out locations it must not: outside the storage root,
 * in another tenant's directory, in another spec, onto a checksum file, through a symbolic link, or slots that do
 * not exist. None may make the agent read, write or create a file outside its own instance's directory; each is a
 * failed write or a miss, counted, never an exception to the caller.
 */
class PoolConfinementTest {
    static final int BLOCK = 64 * 1024;

    @TempDir
    Path tmp;

    GlobalPoolTier tier(HostilePlane plane, String instance, Path root) {
        return new GlobalPoolTier(new KvcmHttpClient(URI.create(plane.uri()), Duration.ofSeconds(5)), instance,
                "default", 16, BLOCK, "tp0", 30, true, 1, List.of(root));
    }

    @Test
    void noLocationLeadsAWriteOutsideTheInstancesDirectory() throws Exception {
        Path root = tmp.resolve("storage");
        String r = root.toString();
        Path victim = root.resolve("other/tp0/slab_00000000");
        Files.createDirectories(victim.getParent());
        Files.write(victim, new byte[2 * BLOCK]);
        Path secret = tmp.resolve("outside/secret");
        Files.createDirectories(secret.getParent());
        Files.write(secret, new byte[BLOCK]);
        Path mine = root.resolve("agent/tp0");
        Files.createDirectories(mine);
        Files.createSymbolicLink(mine.resolve("slab_link"), secret); // planted where a slab belongs
        List<String> hostile = List.of(
                "file://nfs" + tmp + "/outside/secret?blkid=0&size=65536", // outside the root
                "file://nfs" + r + "/../outside/secret?blkid=0&size=65536", // .. out of the root
                "file://nfs" + r + "x/agent/tp0/slab_00000000?blkid=0&size=65536", // a sibling that shares the prefix
                "file://nfs" + r + "/other/tp0/slab_00000000?blkid=1&size=65536", // another tenant's slab
                "file://nfs" + r + "/agent/../other/tp0/slab_00000000?blkid=1&size=65536",
                "file://nfs" + r + "/agent/tp0/../../other/tp0/slab_00000000?blkid=0&size=65536",
                "file://nfs" + r + "/agent/tp0/slab_00000000.crc?blkid=0&size=65536", // a checksum-record file
                "file://nfs" + r + "/agent/tp1/slab_00000000?blkid=0&size=65536", // another spec's directory
                "file://nfs" + r + "/agent/tp0/deeper/slab_00000000?blkid=0&size=65536",
                "file://nfs" + r + "/agent/tp0/slab_%2e%2e?blkid=0&size=65536",
                "file://nfs" + r + "/agent/tp0/slab_\u0000x?blkid=0&size=65536",
                "file://nfs" + r + "/agent/tp0/..?blkid=0&size=65536",
                "file://nfs" + r + "/agent/tp0/slab_00000000?blkid=-1&size=65536",
                "file://nfs" + r + "/agent/tp0/slab_00000000?blkid=4611686018427387904&size=65536", // × size overflows
                "file://nfs" + r + "/agent/tp0/slab_00000000?blkid=99999999999999999999&size=65536",
                "file://nfs" + r + "/agent/tp0/slab_00000000?blkid=1e3&size=65536",
                "file://nfs" + r + "/agent/tp0/slab_00000000?blkid=1&blkid=2&size=65536",
                "file://nfs" + r + "/agent/tp0/slab_00000000?blkid=1&size=4096", // not this tier's block size
                "file://nfs" + r + "/agent/tp0/slab_00000000?blkid=1", // no size
                "file://nfs" + r + "/agent/tp0/slab_00000000?blkid=1&size=-65536",
                "nfs://nfs" + r + "/agent/tp0/slab_00000000?blkid=1&size=65536",
                "file://nfs");
        String link = "file://nfs" + r + "/agent/tp0/slab_link?blkid=0&size=65536";
        String good = "file://nfs" + r + "/agent/tp0/slab_00000001?blkid=1&size=65536";
        Map<String, String> before = tree(tmp);
        List<String> logged = new java.util.concurrent.CopyOnWriteArrayList<>();
        java.util.logging.Logger log = java.util.logging.Logger.getLogger(GlobalPoolTier.class.getName());
        java.util.logging.Handler h = new java.util.logging.Handler() {
            @Override
            public void publish(java.util.logging.LogRecord rec) {
                if (rec.getMessage().contains("refused location")) {
                    logged.add(rec.getMessage());
                }
            }

            @Override
            public void flush() {
            }

            @Override
            public void close() {
            }
        };
        log.addHandler(h);
        List<String> uris = new ArrayList<>(hostile);
        uris.add(link);
        uris.add(good);
        try (HostilePlane plane = new HostilePlane(); GlobalPoolTier pool = tier(plane, "agent", root);
             Arena a = Arena.ofShared()) {
            plane.writeUris = uris;
            pool.register("m");
            long[] keys = TestBlocks.keys(100, uris.size());
            boolean[] stored = pool.put(keys, TestBlocks.random(a, uris.size(), BLOCK, 1), false).join();
            boolean[] expected = new boolean[uris.size()];
            expected[uris.size() - 1] = true; // the one good location only
            assertArrayEquals(expected, stored);
            List<Boolean> mask = new ArrayList<>();
            for (boolean b : expected) {
                mask.add(b);
            }
            assertEquals(List.of(mask), plane.finishes, "the plane is told which writes failed");
            assertEquals(hostile.size(), pool.refusedLocations(), "every refusal counted");
            assertEquals(1, pool.writeFailures(), "the link is not followed: a failed write");
            assertEquals(1, logged.size(), "one line for a burst of refusals, not one each: " + logged);
            assertFalse(logged.get(0).chars().anyMatch(c -> c < 0x20), "the peer's text is escaped: " + logged);
        } finally {
            log.removeHandler(h);
        }
        Map<String, String> after = tree(tmp);
        for (String f : List.of("storage/agent/tp0/slab_00000001", "storage/agent/tp0/slab_00000001.crc")) {
            assertTrue(after.remove(f) != null, f + " written");
        }
        assertEquals(before, after, "nothing else read-write opened, created or changed, the link's target included");
    }

    @Test
    void noLocationLeadsAReadToAnotherTenantsBlock() throws Exception {
        Path root = tmp.resolve("storage");
        String r = root.toString();
        long key = 4242;
        try (HostilePlane plane = new HostilePlane(); GlobalPoolTier agent = tier(plane, "agent", root);
             GlobalPoolTier other = tier(plane, "other", root); Arena a = Arena.ofShared()) {
            // the other tenant's agent stores the block under the same key, with its valid checksum record
            String theirs = "file://nfs" + r + "/other/tp0/slab_00000000?blkid=0&size=65536";
            plane.writeUris = List.of(theirs);
            MemorySegment[] src = TestBlocks.random(a, 1, BLOCK, 7);
            assertTrue(other.put(new long[] {key}, src, false).join()[0]);
            plane.readUris = List.of(theirs);
            MemorySegment[] dst = TestBlocks.empty(a, 1, BLOCK);
            assertTrue(other.get(new long[] {key}, dst).join()[0], "readable and valid where it belongs");
            for (String u : List.of(theirs, "file://nfs" + r + "/agent/../other/tp0/slab_00000000?blkid=0&size=65536",
                    "file://nfs" + r + "/agent/tp0/../../other/tp0/slab_00000000?blkid=0&size=65536")) {
                plane.readUris = List.of(u);
                MemorySegment[] mine = TestBlocks.empty(a, 1, BLOCK);
                assertFalse(agent.get(new long[] {key}, mine).join()[0], u);
                assertEquals(-1, mine[0].mismatch(TestBlocks.empty(a, 1, BLOCK)[0]),
                        "no byte of theirs reached the destination: " + u);
                assertFalse(agent.present(new long[] {key})[0], "not even reported present: " + u);
            }
            assertEquals(6, agent.refusedLocations());
            assertEquals(0, agent.checksumFailures(), "refused before any byte was read");
        }
    }

    @Test
    void identifiersAreCheckedWhereTheTierIsBuilt() throws Exception {
        try (HostilePlane plane = new HostilePlane()) {
            KvcmHttpClient c = new KvcmHttpClient(URI.create(plane.uri()), Duration.ofSeconds(5));
            List<Path> roots = List.of(tmp);
            for (String bad : new String[] {"../x", "a/b", "", ".", "x\u0000y"}) {
                var e = assertThrows(IllegalArgumentException.class,
                        () -> new GlobalPoolTier(c, bad, "default", 16, BLOCK, "tp0", 30, true, 1, roots), bad);
                assertTrue(e.getMessage().startsWith("instance id: "), e.getMessage());
                e = assertThrows(IllegalArgumentException.class,
                        () -> new GlobalPoolTier(c, "agent", "default", 16, BLOCK, bad, 30, true, 1, roots), bad);
                assertTrue(e.getMessage().startsWith("location spec name: "), e.getMessage());
                e = assertThrows(IllegalArgumentException.class,
                        () -> new GlobalPoolTier(c, "agent", bad, 16, BLOCK, "tp0", 30, true, 1, roots), bad);
                assertTrue(e.getMessage().startsWith("instance group: "), e.getMessage());
            }
            assertThrows(IllegalArgumentException.class,
                    () -> new GlobalPoolTier(c, "agent", "default", 16, BLOCK, "tp0", 30, true, 1, List.of()));
        }
    }

    /** Every regular file and link under {@code dir}, relative, with a digest of its bytes (a link: its target). */
    static Map<String, String> tree(Path dir) throws Exception {
        Map<String, String> m = new TreeMap<>();
        try (Stream<Path> s = Files.walk(dir)) {
            for (Path p : s.toList()) {
                String rel = dir.relativize(p).toString();
                if (Files.isSymbolicLink(p)) {
                    m.put(rel, "-> " + Files.readSymbolicLink(p));
                } else if (Files.isRegularFile(p)) {
                    m.put(rel, HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(Files.readAllBytes(p))));
                } else {
                    m.put(rel + "/", "dir");
                }
            }
        }
        return m;
    }
}
