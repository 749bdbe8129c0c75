package dev.kvpool.control.common;

import java.util.List;
import java.util.function.Predicate;

/** One page of a collection: {@code items}, the 0-based {@code page}, its {@code size} and the filtered {@code total}. */
public record Page<T>(List<T> items, int page, int size, long total) {
    public static final int MAX_SIZE = 500;

    /**
     * {@code page} and {@code size} as the query sent them (null: the default): parsed here rather than by JAX-RS,
     * which answers an unparsable number with a bare 404 instead of naming the parameter.
     */
    public static <T> Page<T> of(List<T> all, Predicate<T> filter, String page, String size, int defaultSize) {
        return of(all, filter, Params.integer("page", page, 0, 0, Integer.MAX_VALUE),
                Params.integer("size", size, defaultSize, 1, MAX_SIZE));
    }

    public static <T> Page<T> of(List<T> all, Predicate<T> filter, int page, int size) {
        if (page < 0) {
            throw ApiException.invalid("page", "page must be >= 0, got " + page);
        }
        if (size < 1 || size > MAX_SIZE) {
            throw ApiException.invalid("size", "size must be between 1 and " + MAX_SIZE + ", got " + size);
        }
        List<T> f = all.stream().filter(filter).toList();
        int from = (int) Math.min((long) page * size, f.size());
        return new Page<>(f.subList(from, Math.min(from + size, f.size())), page, size, f.size());
    }
}
