package dev.kvpool.api.json;

/**
 * A JSON body that is not valid proto3 JSON for the target message: malformed JSON, a wrong JSON type for a field,
 * an out-of-range number, trailing data. The message starts with the offending field path, e.g.
 * {@code block_keys[3]: expected an int64}, so that a 400 can be logged usefully (the HTTP body stays {@code {}}).
 */
public final class ProtoJsonException extends RuntimeException {

    private final String path;

    public ProtoJsonException(String path, String problem, Throwable cause) {
        super(path + ": " + problem, cause);
        this.path = path;
    }

    public ProtoJsonException(String path, String problem) {
        this(path, problem, null);
    }

    /** The field path of the problem ({@code "(root)"} for the top-level object). */
    public String path() {
        return path;
    }
}
