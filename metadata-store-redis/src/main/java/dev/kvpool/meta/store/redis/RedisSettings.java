package dev.kvpool.meta.store.redis;

import io.smallrye.config.ConfigMapping;
import io.smallrye.config.WithDefault;
import java.time.Duration;

/** The Redis/Valkey store ({@code kvpool.meta.store=redis}; metadata-store-redis/README.md). */
@ConfigMapping(prefix = "kvpool.meta.redis")
public interface RedisSettings {
    /**
     * Connection string: {@code redis://host:port/db}, {@code rediss://} for TLS; for Redis Cluster
     * {@code quarkus.redis.client-type=cluster} and several hosts separated by commas.
     */
    @WithDefault("redis://127.0.0.1:6379")
    String url();

    /** Key prefix: several deployments can share one Redis. */
    @WithDefault("kvp")
    String prefix();

    /** Per Redis call of the leader lease, the slot allocators and the quota ledger. */
    @WithDefault("5s")
    Duration timeout();

    /**
     * The most keys one background command (HSCAN, HRANDFIELD of eviction passes, sampling, expiry and orphan
     * sweeps; larger pages go as several round trips) asks for. Redis serves no other client while it runs one,
     * at about a microsecond per key: this bounds that stall (with 65,536-key pages, a pass over a 1 M-block
     * instance held every other client for up to ~80 ms per page; docs/benchmarks.md, "On 16 cores").
     */
    @WithDefault("1000")
    int pageSize();

    /** Leader lease: a killed leader is replaced after at most this long. */
    @WithDefault("3s")
    Duration leaseTtl();

    /**
     * How long an abandoned write session outlives its deadline in Redis (the leader's expiry normally closes it
     * at its deadline). Long, so that a replica back after every replica was down still closes it properly
     * (slots and quota returned); only an outage longer than this leaves its WRITING locations to the orphan
     * sweep. Costs nothing while a replica runs.
     */
    @WithDefault("24h")
    Duration sessionGrace();

    /**
     * A finishWriteCache on the replica that started the session, of at least this many keys, is written with
     * native commands under WATCH (HSET/HDEL in MULTI/EXEC): a round trip more, ~1 µs of Redis' single thread
     * less per key than the script (whose arguments all pass through Lua); where Redis is the bottleneck, that
     * is write throughput. 0: always the script. {@code kvpool_meta_redis_finish_native} counts the native ones.
     */
    @WithDefault("128")
    int nativeFinishKeys();

    /**
     * Read hits (access time, LFU counter) are buffered and applied this often, each key once with its count:
     * eviction may see an access up to this late.
     */
    @WithDefault("100ms")
    Duration touchInterval();

    /**
     * Block keys that may wait for their access-time update; beyond it hits are dropped and counted
     * ({@code kvpool_meta_touch_dropped}).
     */
    @WithDefault("1000000")
    long touchBuffer();

    /**
     * How often every replica checks its instances against Redis: removed by another replica (forgotten here),
     * or lost with Redis' data (its registration written again with a new empty index). One HGETALL of the
     * instance records.
     */
    @WithDefault("2s")
    Duration reconcileInterval();

    /**
     * Keep a local copy of the served locations of every instance, fed by a change stream in Redis, so that
     * getCacheLocation answers without a Redis round trip (standalone or cluster; on a cluster each instance is
     * read from its slot's node). Costs heap (39–77 bytes per served block in every replica), one thread, and
     * one stream entry per finish and delete batch in Redis (a written block cost about the same with and
     * without it on 2 shared cores); a new block may be a miss on other replicas for up to
     * {@link #mirrorMaxLag} (metadata-store-redis/README.md, "The local copy").
     */
    @WithDefault("false")
    boolean mirror();

    /**
     * The copy answers only while it is provably at most this far behind Redis, and after this replica's own
     * writes; deleters of every replica add it to the reader lease (the largest value any replica of the
     * deployment uses, kept in Redis).
     */
    @WithDefault("50ms")
    Duration mirrorMaxLag();

    /**
     * After this long without a read of the copy and without a change to apply, the copy polls Redis only every
     * 250 ms (its max lag, if longer) instead of every quarter of its max lag, until the next read wakes it;
     * that read goes to Redis (the copy answers again one round trip later). 0: never.
     */
    @WithDefault("1s")
    Duration mirrorIdleAfter();
}
