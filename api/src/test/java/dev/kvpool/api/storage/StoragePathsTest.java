package dev.kvpool.api.storage;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.kvpool.api.naming.Identifiers;
import java.nio.file.Path;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import org.junit.jupiter.api.Test;

class StoragePathsTest {
    static final Path ROOT = Path.of("/srv/kv/nfs");

    @Test
    void validNamesMakeThePathsOfTheirInstance() {
        assertEquals(Path.of("/srv/kv/nfs/inst-1/tp0/slab_00000001"), StoragePaths.file(ROOT, "inst-1", "tp0", "slab_00000001"));
        assertEquals(Path.of("/srv/kv/nfs/inst-1/tp_3"), StoragePaths.specDir(ROOT, "inst-1", "tp_3"));
        assertEquals(Path.of("/srv/kv/nfs/a/tp0/slab_1"), StoragePaths.locate(ROOT, "/srv/kv/nfs/a/tp0/slab_1", "a"));
    }

    @Test
    void escapesAreRefusedNotRepaired() {
        for (String bad : new String[] {"..", ".", "../b", "a/b", "/etc", "a\u0000", ""}) {
            assertThrows(IllegalArgumentException.class, () -> StoragePaths.instanceDir(ROOT, bad), bad);
            assertThrows(IllegalArgumentException.class, () -> StoragePaths.specDir(ROOT, "a", bad), bad);
            assertThrows(IllegalArgumentException.class, () -> StoragePaths.file(ROOT, "a", "tp0", bad), bad);
        }
        // a peer naming a full path: another instance's, outside the root, through .., too deep, relative
        for (String p : new String[] {"/srv/kv/nfs/b/tp0/slab_1", "/etc/passwd", "/srv/kv/nfs/a/../b/tp0/slab_1",
                "/srv/kv/nfs/a/tp0/x/slab_1", "srv/kv/nfs/a/tp0/slab_1", "/srv/kv/nfs/a/tp0/..", "/srv/kv/nfsx/a/tp0/s"}) {
            assertThrows(StoragePaths.EscapeException.class, () -> StoragePaths.locate(ROOT, p, "a"), p);
        }
        assertThrows(IllegalArgumentException.class, () -> StoragePaths.instanceDir(Path.of("relative"), "a"));
    }

    @Provide
    Arbitrary<String> names() {
        // names built from the characters that matter for paths, with the rule's own characters mixed in
        return Arbitraries.strings().withChars("./\\\u0000a-_%:{}").ofMinLength(0).ofMaxLength(8)
                .injectDuplicates(0.1).edgeCases(c -> c.add("..").add(".").add("/").add("a/../.."));
    }

    @Property(tries = 3000)
    void everyPathItBuildsLiesInsideItsInstancesDirectory(@ForAll("names") String instance, @ForAll("names") String spec,
                                                         @ForAll("names") String file) {
        Path p;
        try {
            p = StoragePaths.file(ROOT, instance, spec, file);
        } catch (IllegalArgumentException refused) {
            return;
        }
        assertTrue(Identifiers.valid(Identifiers.Kind.INSTANCE, instance) && Identifiers.valid(Identifiers.Kind.SPEC, spec));
        assertTrue(p.startsWith(ROOT.resolve(instance)) && p.normalize().equals(p), p.toString());
        assertEquals(3, ROOT.relativize(p).getNameCount(), p.toString());
    }

    @Property(tries = 3000)
    void locateAcceptsOnlyItsOwnInstancesFiles(@ForAll("names") String a, @ForAll("names") String b, @ForAll("names") String c) {
        String path = ROOT + "/" + a + "/" + b + "/" + c;
        Path p;
        try {
            p = StoragePaths.locate(ROOT, path, "own");
        } catch (IllegalArgumentException refused) {
            return;
        }
        assertTrue(p.startsWith(ROOT.resolve("own")), p.toString());
    }
}
