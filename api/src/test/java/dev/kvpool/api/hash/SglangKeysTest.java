package dev.kvpool.api.hash;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

/** The SGLang HiCache connector's client-side keys (spec §3.2.4). */
class SglangKeysTest {

    @Test
    void vectors() {
        assertEquals(-5010229573455851542L, SglangKeys.of("abc"));
        assertEquals(-3906683858646686286L, SglangKeys.of("page-0"));
    }
}
