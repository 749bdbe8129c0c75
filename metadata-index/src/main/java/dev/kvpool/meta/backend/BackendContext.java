package dev.kvpool.meta.backend;

import java.nio.file.Path;

/**
 * What the plane hands a backend when it opens it.
 *
 * @param dataDir  this replica's data directory (created; a backend that persists locally keeps its files
 *                 under it)
 * @param nodeId   this replica's name (the leader lease's holder)
 * @param progress where a backend that loads its index at start-up reports how far it got
 */
public record BackendContext(Path dataDir, String nodeId, LoadProgress progress) {
}
