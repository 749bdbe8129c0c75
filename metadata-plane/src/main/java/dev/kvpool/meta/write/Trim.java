package dev.kvpool.meta.write;

/** What TrimCache removes from an instance (the KVCM adapters map the wire's TrimStrategy to it). */
public enum Trim {
    /** Every location and its bytes; sessions in flight keep theirs. */
    REMOVE_ALL_CACHE,
    /** Every location, the storage's files stay. */
    REMOVE_ALL_META,
    /** The locations written in [begin, end) epoch seconds. */
    TIMESTAMP
}
