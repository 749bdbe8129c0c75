package dev.kvpool.api.hash;

import java.nio.charset.StandardCharsets;

/** The block keys SGLang's HiCache KVCM backend sends: SHA-256 of the page hash string, first 8 bytes signed BE. */
public final class SglangKeys {
    private SglangKeys() {
    }

    public static long of(String pageHash) {
        byte[] d = VllmSha256Cbor.sha256(pageHash.getBytes(StandardCharsets.UTF_8));
        long v = 0;
        for (int i = 0; i < 8; i++) {
            v = (v << 8) | (d[i] & 0xFF);
        }
        return v;
    }
}
