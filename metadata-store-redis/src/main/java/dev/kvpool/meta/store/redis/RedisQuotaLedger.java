package dev.kvpool.meta.store.redis;

import dev.kvpool.meta.quota.QuotaLedger;
import dev.kvpool.meta.index.StorageKind;
import io.vertx.redis.client.Command;
import io.vertx.redis.client.Redis;
import io.vertx.redis.client.Request;
import io.vertx.redis.client.Response;
import java.time.Duration;
import java.util.EnumMap;
import java.util.List;

/**
 * The usage ledger in Redis, shared by every replica over one Redis store: one hash per group ({@code total},
 * {@code t:<TYPE>}), changed only by scripts, so a reservation checks and adds in one atomic step across replicas
 * and the hard quota holds cluster-wide. Each group is one key: one slot in Redis Cluster.
 */
public final class RedisQuotaLedger implements QuotaLedger {
    private static final Lua.Script RESERVE = Lua.Script.of("reserve", """
            local total = tonumber(redis.call('HGET', KEYS[1], 'total') or '0')
            local add = tonumber(ARGV[1])
            local cap = tonumber(ARGV[2])
            if cap <= 0 or add > cap - total then return 0 end
            local tf = 't:' .. ARGV[3]
            local t = tonumber(redis.call('HGET', KEYS[1], tf) or '0')
            if ARGV[5] ~= '' and tonumber(ARGV[4]) > tonumber(ARGV[5]) - t then return 0 end
            redis.call('HINCRBY', KEYS[1], 'total', add)
            redis.call('HINCRBY', KEYS[1], tf, ARGV[4])
            return 1""");
    // never below zero, like the in-process ledger; returns the bytes a release would have gone below zero (drift)
    private static final Lua.Script ADD = Lua.Script.of("add", """
            local drift = 0
            local total = tonumber(redis.call('HGET', KEYS[1], 'total') or '0') + tonumber(ARGV[1])
            if total < 0 then drift = -total; total = 0 end
            redis.call('HSET', KEYS[1], 'total', string.format('%.0f', total))
            if ARGV[2] ~= '' then
              local tf = 't:' .. ARGV[2]
              local t = tonumber(redis.call('HGET', KEYS[1], tf) or '0') + tonumber(ARGV[3])
              if t < 0 then drift = math.max(drift, -t); t = 0 end
              redis.call('HSET', KEYS[1], tf, string.format('%.0f', t))
            end
            return string.format('%.0f', drift)""");

    private final Calls redis;
    private final String prefix;

    public RedisQuotaLedger(Redis redis, String prefix, Duration timeout) {
        this.redis = new Calls(redis, timeout);
        this.prefix = prefix;
    }

    private String key(String group) {
        return prefix + "quota:{" + group + "}";
    }

    @Override
    public Usage usage(String group) {
        Response r = redis.send(Request.cmd(Command.HGETALL).arg(key(group)), "usage of group " + group);
        long total = 0;
        EnumMap<StorageKind, Long> types = new EnumMap<>(StorageKind.class);
        if (r != null) {
            for (String f : r.getKeys()) {
                long v = r.get(f).toLong();
                if (f.equals("total")) {
                    total = v;
                } else if (f.startsWith("t:")) {
                    types.put(StorageKind.valueOf(f.substring(2)), v);
                }
            }
        }
        return new Usage(total, types);
    }

    @Override
    public boolean tryReserve(String group, long totalBytes, long capacity, StorageKind kind, long typeBytes,
                              Long typeCapacity) {
        QuotaLedger.checkReservation(totalBytes, typeBytes);
        return redis.eval(RESERVE, List.of(key(group)), List.of(totalBytes, capacity, kind.usageKind().name(), typeBytes,
                typeCapacity == null ? "" : typeCapacity), "reserve quota of group " + group).toLong() == 1;
    }

    @Override
    public void add(String group, long totalBytes, StorageKind kind, long typeBytes) {
        Response drifted = redis.eval(ADD, List.of(key(group)), List.of(totalBytes, kind == null ? ""
                : kind.usageKind().name(), typeBytes), "update usage of group " + group);
        drift.report(group, drifted == null ? 0 : Long.parseLong(drifted.toString()), "a release");
    }

    private final DriftLog drift = new DriftLog();

    @Override
    public DriftLog drift() {
        return drift;
    }

    @Override
    public void reset(String group) {
        redis.send(Request.cmd(Command.DEL).arg(key(group)), "reset usage of group " + group);
    }
}
