package dev.kvpool.api.hash;

import java.nio.charset.StandardCharsets;

/**
 * The block keys the SGLang HiCache connector sends (spec §3.2.4): SHA-256 of the page-hash string's UTF-8,
 * first 8 bytes read as a big-endian signed int64. The server never computes these; tests emulate the client.
 */
public final class SglangKeys {

    private SglangKeys() {
    }

    public static long of(String pageHash) {
        return Digests.longBE(Digests.sha256().digest(pageHash.getBytes(StandardCharsets.UTF_8)), 0);
    }
}
