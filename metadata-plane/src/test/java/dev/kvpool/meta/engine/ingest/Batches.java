package dev.kvpool.meta.engine.ingest;

import java.io.IOException;
import java.io.UncheckedIOException;
import org.msgpack.core.MessageBufferPacker;
import org.msgpack.core.MessagePack;

/** vLLM KV-event batches in the legacy array encoding (kvcm-engine-events.md §12), built with msgpack-core. */
final class Batches {
    private Batches() {
    }

    sealed interface Ev permits Stored, Removed, Cleared {
    }

    record Stored(long[] hashes, String medium, Integer group) implements Ev {
    }

    record Removed(long[] hashes, String medium) implements Ev {
    }

    record Cleared() implements Ev {
    }

    static Stored stored(String medium, long... hashes) {
        return new Stored(hashes, medium, 0);
    }

    static Removed removed(String medium, long... hashes) {
        return new Removed(hashes, medium);
    }

    static byte[] batch(Integer rank, Ev... events) {
        try (MessageBufferPacker p = MessagePack.newDefaultBufferPacker()) {
            p.packArrayHeader(3);
            p.packDouble(1700000000.5);
            p.packArrayHeader(events.length);
            for (Ev e : events) {
                switch (e) {
                    case Stored s -> {
                        p.packArrayHeader(10);
                        p.packString("BlockStored");
                        p.packArrayHeader(s.hashes().length);
                        for (long h : s.hashes()) {
                            if (h < 0) { // vLLM's int hashes are unsigned: >= 2^63 goes as uint64
                                p.packBigInteger(new java.math.BigInteger(Long.toUnsignedString(h)));
                            } else {
                                p.packLong(h);
                            }
                        }
                        p.packNil(); // parent
                        p.packArrayHeader(0); // token_ids
                        p.packInt(16);
                        p.packNil(); // lora_id
                        if (s.medium() == null) {
                            p.packNil();
                        } else {
                            p.packString(s.medium());
                        }
                        p.packNil(); // lora_name
                        p.packNil(); // extra_keys
                        if (s.group() == null) {
                            p.packNil();
                        } else {
                            p.packInt(s.group());
                        }
                    }
                    case Removed r -> {
                        p.packArrayHeader(3);
                        p.packString("BlockRemoved");
                        p.packArrayHeader(r.hashes().length);
                        for (long h : r.hashes()) {
                            p.packLong(h);
                        }
                        if (r.medium() == null) {
                            p.packNil();
                        } else {
                            p.packString(r.medium());
                        }
                    }
                    case Cleared c -> {
                        p.packArrayHeader(1);
                        p.packString("AllBlocksCleared");
                    }
                }
            }
            if (rank == null) {
                p.packNil();
            } else {
                p.packInt(rank);
            }
            return p.toByteArray();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
