package dev.kvpool.api.hash;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.stream.LongStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** Vectors V1–V6 and the hex table of spec §3.2.3. */
class KvcmHashTest {

    static long[] range(long fromInclusive, long toInclusive) {
        return LongStream.rangeClosed(fromInclusive, toInclusive).toArray();
    }

    @Test
    void v1() {
        assertArrayEquals(new long[] {455111481605203084L, 6902853672176602142L, -6574591296779146224L,
            3436079420768077133L}, KvcmHash.keys(range(1, 16), 4));
    }

    @Test
    void v2() {
        assertArrayEquals(new long[] {2681637840371060507L, -6990124544746687103L}, KvcmHash.keys(range(0, 127), 64));
    }

    @Test
    void v3() {
        assertArrayEquals(new long[] {-8366447770138823354L, 555627685913999257L},
                KvcmHash.keys(new long[] {151643, 872, 198, 3838}, 2));
    }

    @Test
    void v4_trailingPartialBlockIsDropped() {
        long[] keys = KvcmHash.keys(range(1, 5), 2);
        assertArrayEquals(new long[] {-8366447769517741626L, 455111481605203084L}, keys);
        assertEquals(KvcmHash.keys(range(1, 16), 4)[0], keys[1], "key after 4 tokens is block-size independent");
    }

    @Test
    void v5_v6_lessThanOneBlockGivesNoKeys() {
        assertEquals(0, KvcmHash.keys(new long[] {7}, 4).length);
        assertEquals(0, KvcmHash.keys(new long[0], 4).length);
    }

    @Test
    void stepResumesFromACachedPrefixState() {
        long[] tokens = range(1, 16);
        long[] all = KvcmHash.keys(tokens, 4);
        long prefixState = all[1]; // state after 8 tokens, e.g. from a cache
        assertEquals(all[2], KvcmHash.step(prefixState, tokens, 8, 12));
        assertEquals(all[3], KvcmHash.step(KvcmHash.step(prefixState, tokens, 8, 10), tokens, 10, 16));
        assertEquals(all[0], KvcmHash.step(0, tokens, 0, 4));
    }

    @Test
    void rejectsNonPositiveBlockSize() {
        assertThrows(IllegalArgumentException.class, () -> KvcmHash.keys(range(1, 4), 0));
    }

    @ParameterizedTest
    @CsvSource({
        "123, 7b",
        "-1, ffffffffffffffff",
        "-6574591296779146224, a4c25c0c9c1aac10",
        "455111481605203084, 650e17b3247a48c",
        "0, 0",
    })
    void hexIsUnsignedLowerCaseWithoutLeadingZeros(long key, String hex) {
        assertEquals(hex, KvcmHash.hex(key));
    }
}
