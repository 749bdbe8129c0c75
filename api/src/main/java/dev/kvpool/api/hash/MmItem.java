package dev.kvpool.api.hash;

/**
 * One multimodal item of a request (an image, an audio clip...): vLLM's content {@code identifier} and its
 * placeholder range {@code [offset, offset + length)} in token positions (shared/spec/hashing.md §3.4). Checked at
 * construction: identifier non-empty well-formed text of at most {@value ExtraKeys#MAX_TEXT_BYTES} UTF-8 bytes,
 * offset and length ≥ 0 and their sum within a long.
 */
public record MmItem(String identifier, long offset, long length) {

    public MmItem {
        String p = ExtraKeys.textProblem(identifier, ExtraKeys.MAX_TEXT_BYTES);
        if (p != null) {
            throw new IllegalArgumentException("identifier: " + p);
        }
        if (offset < 0) {
            throw new IllegalArgumentException("offset: must be >= 0, was " + offset);
        }
        if (length < 0) {
            throw new IllegalArgumentException("length: must be >= 0, was " + length);
        }
        if (offset > Long.MAX_VALUE - length) {
            throw new IllegalArgumentException("offset + length overflows a 64-bit integer (" + offset + " + " + length
                    + ")");
        }
    }

    /** The first token position after the item. */
    public long end() {
        return offset + length;
    }
}
