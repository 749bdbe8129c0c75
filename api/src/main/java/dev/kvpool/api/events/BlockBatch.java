package dev.kvpool.api.events;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonProperty;
import java.util.List;

/**
 * One {@code kvpool.blocks} record: a batch of block lifecycle events of one agent and instance. {@code seq}
 * grows by one per batch per agent, so a consumer sees a gap when it missed one.
 */
@JsonInclude(JsonInclude.Include.NON_NULL)
public record BlockBatch(
        @JsonProperty("agent") String agent,
        @JsonProperty("instance_id") String instanceId,
        @JsonProperty("instance_group") String instanceGroup,
        @JsonProperty("seq") long seq,
        @JsonProperty("ts_ms") long tsMs,
        @JsonProperty("events") List<BlockEvent> events) {

    /** One event; fields that do not apply to its type are null and left out of the JSON. */
    @JsonInclude(JsonInclude.Include.NON_NULL)
    public record BlockEvent(
            @JsonProperty("event_type") String eventType,
            @JsonProperty("block_hashes") long[] blockHashes,
            @JsonProperty("parent_block_hash") Long parentBlockHash,
            @JsonProperty("block_size") Integer blockSize,
            @JsonProperty("medium") String medium,
            @JsonProperty("storage_location") String storageLocation,
            @JsonProperty("bytes") Long bytes) {

        public static final String STORED = "stored", REMOVED = "removed", ALL_CLEARED = "all_cleared",
                ONBOARDED = "onboarded";
        /** KVBM's G1..G4. */
        public static final String GPU = "gpu", CPU = "cpu", DISK = "disk", REMOTE = "remote";

        public static BlockEvent stored(long[] hashes, Long parent, int blockSize, String medium, String where,
                                        long bytes) {
            return new BlockEvent(STORED, hashes, parent, blockSize, medium, where, bytes);
        }

        public static BlockEvent removed(long[] hashes, String medium) {
            return new BlockEvent(REMOVED, hashes, null, null, medium, null, null);
        }

        public static BlockEvent onboarded(long[] hashes, String medium) {
            return new BlockEvent(ONBOARDED, hashes, null, null, medium, null, null);
        }

        public static BlockEvent allCleared() {
            return new BlockEvent(ALL_CLEARED, null, null, null, null, null, null);
        }
    }
}
