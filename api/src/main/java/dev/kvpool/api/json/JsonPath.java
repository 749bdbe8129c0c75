package dev.kvpool.api.json;

import java.util.Arrays;

/** The field path being read, kept as cheap parallel arrays and only rendered when an error is reported. */
final class JsonPath {

    private String[] names = new String[8];
    private int[] indexes = new int[8];
    private String[] keys = new String[8];
    private int depth;

    void push(String name) {
        if (depth == names.length) {
            names = Arrays.copyOf(names, depth * 2);
            indexes = Arrays.copyOf(indexes, depth * 2);
            keys = Arrays.copyOf(keys, depth * 2);
        }
        names[depth] = name;
        indexes[depth] = -1;
        keys[depth] = null;
        depth++;
    }

    /** The element index inside the innermost (repeated) field. */
    void index(int i) {
        indexes[depth - 1] = i;
    }

    /** The entry key inside the innermost (map) field. */
    void key(String k) {
        keys[depth - 1] = k;
    }

    void pop() {
        depth--;
    }

    @Override
    public String toString() {
        if (depth == 0) {
            return "(root)";
        }
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < depth; i++) {
            if (i > 0) {
                sb.append('.');
            }
            sb.append(names[i]);
            if (keys[i] != null) {
                sb.append("[\"").append(keys[i]).append("\"]");
            } else if (indexes[i] >= 0) {
                sb.append('[').append(indexes[i]).append(']');
            }
        }
        return sb.toString();
    }
}
