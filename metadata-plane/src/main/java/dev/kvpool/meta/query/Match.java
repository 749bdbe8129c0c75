package dev.kvpool.meta.query;

/** How a read matches its keys (the KVCM adapters map the wire's QueryType to it). */
public enum Match {
    /** The longest served prefix, masked keys skipped (QT_PREFIX_MATCH). */
    PREFIX,
    /** Every key on its own (QT_BATCH_GET). */
    BATCH,
    /** The served window at the end of the keys (QT_REVERSE_ROLL_SW_MATCH). */
    SLIDING_WINDOW
}
