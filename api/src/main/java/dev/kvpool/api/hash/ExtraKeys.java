package dev.kvpool.api.hash;

import java.nio.CharBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * vLLM's per-block extra keys ({@code generate_block_hash_extra_keys}, shared/spec/hashing.md §3.4) built from
 * request-level inputs. Block i gets null when it has none (never an empty list: null and [] hash differently),
 * else, in this order: the LoRA name; one {@code [identifier, item offset − block start]} pair per multimodal item
 * overlapping the block (negative when the item began in an earlier block); the cache salt (block 0 only, when
 * non-empty); the block's prompt-embedding digest (32 bytes) when given. The result feeds
 * {@link VllmCborHash#blockDigests}.
 */
public final class ExtraKeys {

    /** Most multimodal items per request. */
    public static final int MAX_MM_ITEMS = 4096;
    /** Most UTF-8 bytes of a LoRA name or a multimodal identifier. */
    public static final int MAX_TEXT_BYTES = 1024;
    /** Most UTF-8 bytes of a cache salt. */
    public static final int MAX_SALT_BYTES = 4096;
    /** Size of a prompt-embedding slice digest (SHA-256 of the slice's raw tensor bytes). */
    public static final int PROMPT_EMBED_DIGEST_BYTES = 32;

    private ExtraKeys() {
    }

    /** The extra keys of each of {@code blocks} full blocks; every token counts as a prompt token. */
    public static List<Object> perBlock(ExtraKeyInputs in, int blocks, int blockSize) {
        return perBlock(in, blocks, blockSize, null, Long.MAX_VALUE);
    }

    /**
     * The extra keys of each of {@code blocks} full blocks.
     *
     * @param promptEmbedDigests per block: null or the 32-byte SHA-256 of that block's slice of
     *     {@code prompt_embeds} (how vLLM lays out those bytes is not fixed by the spec: the caller computes them).
     *     The list may be null or shorter than {@code blocks}, not longer.
     * @param promptTokens the prompt's length. vLLM hashes the prompt's full blocks when a request arrives, walking
     *     the multimodal items from the first; a block completed later by generated tokens restarts the walk at the
     *     last item. {@code Long.MAX_VALUE} treats all tokens as prompt.
     */
    public static List<Object> perBlock(ExtraKeyInputs in, int blocks, int blockSize, List<byte[]> promptEmbedDigests,
                                        long promptTokens) {
        if (blockSize <= 0) {
            throw new IllegalArgumentException("blockSize must be > 0, was " + blockSize);
        }
        if (blocks < 0) {
            throw new IllegalArgumentException("blocks must be >= 0, was " + blocks);
        }
        if (promptTokens < 0) {
            throw new IllegalArgumentException("promptTokens must be >= 0, was " + promptTokens);
        }
        if (in == null) {
            in = ExtraKeyInputs.NONE;
        }
        if (promptEmbedDigests != null) {
            if (promptEmbedDigests.size() > blocks) {
                throw new IllegalArgumentException("prompt embedding digests: " + promptEmbedDigests.size()
                        + " given for " + blocks + " full blocks");
            }
            for (int i = 0; i < promptEmbedDigests.size(); i++) {
                byte[] d = promptEmbedDigests.get(i);
                if (d != null && d.length != PROMPT_EMBED_DIGEST_BYTES) {
                    throw new IllegalArgumentException("prompt embedding digest of block " + i + ": expected "
                            + PROMPT_EMBED_DIGEST_BYTES + " bytes (SHA-256), got " + d.length);
                }
            }
        }
        List<MmItem> items = in.mmItems();
        String salt = in.cacheSalt() == null || in.cacheSalt().isEmpty() ? null : in.cacheSalt();
        List<Object> out = new ArrayList<>(blocks);
        int cur = 0; // vLLM's curr_mm_idx, carried from block to block
        for (int b = 0; b < blocks; b++) {
            long start = (long) b * blockSize;
            long end = start + blockSize;
            if (b > 0 && end > promptTokens && !items.isEmpty()) {
                cur = items.size() - 1; // start_mm_idx = -1: a block completed by generated tokens
            }
            List<Object> keys = new ArrayList<>(2);
            if (in.loraName() != null) {
                keys.add(in.loraName());
            }
            cur = mmKeys(items, start, end, cur, keys);
            if (b == 0 && salt != null) {
                keys.add(salt);
            }
            if (promptEmbedDigests != null && b < promptEmbedDigests.size() && promptEmbedDigests.get(b) != null) {
                keys.add(promptEmbedDigests.get(b).clone());
            }
            out.add(keys.isEmpty() ? null : keys);
        }
        return out;
    }

    /** vLLM's {@code _gen_mm_extra_hash_keys}, step for step; returns the index the next block starts from. */
    private static int mmKeys(List<MmItem> items, long start, long end, int cur, List<Object> keys) {
        if (items.isEmpty() || items.getLast().end() < start) {
            return cur; // past every item (late prefill, decoding)
        }
        while (cur < items.size()) {
            MmItem it = items.get(cur);
            if (end <= it.offset()) {
                break; // the block has not reached this item
            }
            if (start > it.end()) {
                cur++; // the block has passed this item
                continue;
            }
            keys.add(Arrays.asList(it.identifier(), it.offset() - start));
            if (end >= it.end()) {
                cur++; // the item ends in this block; the next may start in it too
            } else {
                break; // the item runs on into the next block
            }
        }
        return cur;
    }

    /** Why {@code s} cannot be a name (null when it can): null, empty, too long, or not encodable as UTF-8. */
    static String textProblem(String s, int maxBytes) {
        if (s == null) {
            return "is missing";
        }
        if (s.isEmpty()) {
            return "must not be empty";
        }
        if (s.length() > maxBytes) {
            return "at most " + maxBytes + " UTF-8 bytes, got " + s.length() + " characters";
        }
        int bytes;
        try {
            // REPORT: a lone surrogate would otherwise become '?' here while Python refuses to encode it
            bytes = StandardCharsets.UTF_8.newEncoder().onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT).encode(CharBuffer.wrap(s)).remaining();
        } catch (CharacterCodingException e) {
            return "is not valid Unicode text (unpaired surrogate)";
        }
        if (bytes > maxBytes) {
            return "at most " + maxBytes + " UTF-8 bytes, got " + bytes;
        }
        return null;
    }
}
