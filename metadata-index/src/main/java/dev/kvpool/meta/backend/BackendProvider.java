package dev.kvpool.meta.backend;

/**
 * One storage kind of the metadata plane, as its module offers it: each backend module ships one provider (a CDI
 * bean), and the plane opens the one whose {@link #kind()} kvpool.meta.store names. A new kind is a new module with
 * a provider and its own settings; nothing else in the plane changes.
 */
public interface BackendProvider {
    /** The value of kvpool.meta.store that selects this backend ("embedded", "redis"). */
    String kind();

    /** One line for the start-up log: where the store is (a directory, a Redis URL). */
    String describe();

    /**
     * Opens the backend: its index store (loaded, for a store that keeps its index in memory), leadership, quota
     * ledger and slot allocation. Called once per process, from the plane's start-up thread.
     */
    MetaBackend open(BackendContext context);

    /**
     * The provider of {@code kind} (any case, as an enum setting accepted before), else an IllegalArgumentException
     * naming the kinds there are.
     */
    static BackendProvider select(String kind, Iterable<? extends BackendProvider> providers) {
        String k = kind.trim().toLowerCase(java.util.Locale.ROOT);
        java.util.List<String> known = new java.util.ArrayList<>();
        for (BackendProvider p : providers) {
            if (p.kind().equals(k)) {
                return p;
            }
            known.add(p.kind());
        }
        throw new IllegalArgumentException("kvpool.meta.store=" + kind + " names no backend; known: "
                + known.stream().sorted().toList());
    }
}
