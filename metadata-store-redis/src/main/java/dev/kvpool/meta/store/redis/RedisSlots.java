package dev.kvpool.meta.store.redis;

import dev.kvpool.meta.slots.SlotAllocator;
import dev.kvpool.meta.slots.Slots;
import io.vertx.redis.client.Command;
import io.vertx.redis.client.Redis;
import io.vertx.redis.client.Request;
import io.vertx.redis.client.Response;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * File-slot allocation of one (instance, storage) in Redis, so replicas writing the same instance never hand out
 * one slot twice and a slot freed by the leader's reclaimer is reusable by every replica. Three keys under one
 * hash tag (one Cluster slot): {@code next} (slots ever opened, counting through files in order), the set of
 * free addresses, and the per-file count of used slots. Slot {@code i} is address
 * {@code (i / slotsPerFile) << 24 | i % slotsPerFile}.
 */
public final class RedisSlots implements Slots {
    // addresses are below 2^53, so Lua's doubles hold them exactly; %.0f avoids exponent notation
    // freed slots come back one by one; fresh ones as a range of slot indexes (Java turns them into addresses), so
    // the script's work per fresh slot is nothing and per file one counter update. A file the range opens at its
    // first slot has no counter yet (files past the frontier never had one, and an emptied file's number is never
    // reached again), so those counters are set by one HSET instead of a HINCRBY each (small files: 64 per batch)
    private static final Lua.Script ALLOCATE = Lua.Script.of("allocate", """
            local n = tonumber(ARGV[1])
            local spf = tonumber(ARGV[2])
            local popped, perFile, fresh = {}, {}, {}
            if n > 0 then popped = redis.call('SPOP', KEYS[2], n) end
            for _, a in ipairs(popped) do
              local f = math.floor(tonumber(a) / 16777216)
              perFile[f] = (perFile[f] or 0) + 1
            end
            local rest = n - #popped
            local first = 0
            if rest > 0 then
              local last = redis.call('HINCRBY', KEYS[1], 'next', rest)
              first = last - rest
              local i = first
              while i < last do
                local f = math.floor(i / spf)
                local e = math.min(last, (f + 1) * spf)
                if i == f * spf and not perFile[f] then
                  fresh[#fresh + 1] = string.format('%.0f', f)
                  fresh[#fresh + 1] = e - i
                else
                  perFile[f] = (perFile[f] or 0) + (e - i)
                end
                i = e
              end
            end
            for f, c in pairs(perFile) do redis.call('HINCRBY', KEYS[3], string.format('%.0f', f), c) end
            for c = 1, #fresh, 4000 do redis.call('HSET', KEYS[3], unpack(fresh, c, math.min(#fresh, c + 3999))) end
            return {popped, first, rest}""");
    // an emptied file is deleted by the caller, so none of its slots may be handed out again: its free addresses
    // leave the set (once per file, amortised over its slots) and, when it is the file being filled, fresh slots
    // move on to the next file; a late second free of such a slot changes nothing. ARGV: slots per file, then
    // addresses; returns the addresses that emptied a file
    private static final Lua.Script FREE = Lua.Script.of("free", """
            local spf = tonumber(ARGV[1])
            local emptied = {}
            for k = 2, #ARGV do
              local address = ARGV[k]
              if redis.call('SADD', KEYS[2], address) == 1 then
                local file = math.floor(tonumber(address) / 16777216)
                local fkey = string.format('%.0f', file)
                local c = redis.call('HINCRBY', KEYS[3], fkey, -1)
                if c < 0 then
                  -- a file with no used slots: it emptied (and left) before, so this is a late double free
                  redis.call('HDEL', KEYS[3], fkey)
                  redis.call('SREM', KEYS[2], address)
                elseif c == 0 then
                  redis.call('HDEL', KEYS[3], fkey)
                  local nxt = tonumber(redis.call('HGET', KEYS[1], 'next') or '0')
                  if math.floor(nxt / spf) == file and nxt % spf ~= 0 then
                    redis.call('HSET', KEYS[1], 'next', string.format('%.0f', (file + 1) * spf))
                  end
                  local base = file * 16777216
                  local batch = {}
                  for i = 0, spf - 1 do
                    batch[#batch + 1] = string.format('%.0f', base + i)
                    if #batch == 4000 or i == spf - 1 then
                      redis.call('SREM', KEYS[2], unpack(batch))
                      batch = {}
                    end
                  end
                  emptied[#emptied + 1] = address
                end
              end
            end
            return emptied""");
    // fresh slots start at file ARGV[1] or later (ARGV[2]: slots per file); the frontier never moves back
    private static final Lua.Script OPEN_FROM = Lua.Script.of("open_from", """
            local want = tonumber(ARGV[1]) * tonumber(ARGV[2])
            local nxt = tonumber(redis.call('HGET', KEYS[1], 'next') or '0')
            if nxt < want then redis.call('HSET', KEYS[1], 'next', string.format('%.0f', want)) end
            return 0""");
    /**
     * Addresses per free script call: ~1 µs each, and Redis serves no one else while a script runs, so a call
     * stays near a millisecond like the purge batches (4,000 held other clients for 4-7 ms).
     */
    private static final int FREE_BATCH = 1024;

    private final Calls redis;
    private final String kNext, kFree, kFiles;
    private final int slotsPerFile;

    public RedisSlots(Redis redis, String prefix, String instanceId, int storageNumber, int slotsPerFile,
                      Duration timeout) {
        this.redis = new Calls(redis, timeout);
        String base = prefix + "slots:{" + instanceId + "}:" + storageNumber;
        this.kNext = base + ":next";
        this.kFree = base + ":free";
        this.kFiles = base + ":files";
        this.slotsPerFile = slotsPerFile;
    }

    private List<String> keys() {
        return List.of(kNext, kFree, kFiles);
    }

    @Override
    public long[] allocate(int n) {
        return addresses(redis.eval(ALLOCATE, keys(), List.of(n, slotsPerFile), "allocate " + n + " slots"));
    }

    @Override
    public java.util.concurrent.CompletableFuture<long[]> allocateAsync(int n) {
        return redis.evalAsync(ALLOCATE, keys(), List.of(n, slotsPerFile), "allocate " + n + " slots")
                .thenApply(this::addresses);
    }

    /** The ALLOCATE answer: the popped free addresses, then the fresh range as addresses. */
    private long[] addresses(Response r) {
        Response popped = r.get(0);
        long first = r.get(1).toLong();
        int fresh = r.get(2).toInteger();
        long[] out = new long[popped.size() + fresh];
        for (int i = 0; i < popped.size(); i++) {
            out[i] = Long.parseLong(popped.get(i).toString());
        }
        for (int i = 0; i < fresh; i++) {
            long idx = first + i;
            out[popped.size() + i] = SlotAllocator.address(idx / slotsPerFile, (int) (idx % slotsPerFile));
        }
        return out;
    }

    @Override
    public boolean free(long address) {
        return freeAll(new long[] {address}).length == 1;
    }

    @Override
    public long[] freeAll(long[] addresses) {
        List<Long> emptied = new ArrayList<>();
        for (int off = 0; off < addresses.length; off += FREE_BATCH) {
            int n = Math.min(FREE_BATCH, addresses.length - off);
            List<Object> args = new ArrayList<>(n + 1);
            args.add(slotsPerFile);
            for (int i = off; i < off + n; i++) {
                args.add(addresses[i]);
            }
            Response r = redis.eval(FREE, keys(), args, "free " + n + " slots");
            for (int i = 0; i < r.size(); i++) {
                emptied.add(Long.parseLong(r.get(i).toString()));
            }
        }
        return emptied.stream().mapToLong(Long::longValue).toArray();
    }

    @Override
    public void rebuild(long[] usedAddresses) {
        redis.send(Request.cmd(Command.DEL).arg(kNext).arg(kFree).arg(kFiles), "reset slots");
        if (usedAddresses.length == 0) {
            return;
        }
        // slot indices sorted, in primitive arrays: a cold start may bring hundreds of millions of them
        long[] used = new long[usedAddresses.length];
        for (int i = 0; i < used.length; i++) {
            long a = usedAddresses[i];
            used[i] = SlotAllocator.file(a) * slotsPerFile + SlotAllocator.slot(a);
        }
        java.util.Arrays.sort(used);
        long next = used[used.length - 1] + 1;
        redis.send(Request.cmd(Command.HSET).arg(kNext).arg("next").arg(next), "rebuild slots");
        Request files = Request.cmd(Command.HSET).arg(kFiles);
        int fields = 0;
        for (int i = 0; i < used.length; ) { // slots in use per file, from the sorted run of each file
            long file = used[i] / slotsPerFile;
            int j = i;
            long count = 0;
            while (j < used.length && used[j] / slotsPerFile == file) {
                if (j == i || used[j] != used[j - 1]) {
                    count++;
                }
                j++;
            }
            files.arg(file).arg(count);
            if (++fields == 4096) {
                redis.send(files, "rebuild slot counts");
                files = Request.cmd(Command.HSET).arg(kFiles);
                fields = 0;
            }
            i = j;
        }
        if (fields > 0) {
            redis.send(files, "rebuild slot counts");
        }
        Request free = Request.cmd(Command.SADD).arg(kFree);
        int members = 0;
        // the unused slots of files that hold a block; a file without one was emptied, and its number is never
        // handed out again (the in-process allocator does the same; the storage sweep relies on it)
        for (int u = 0; u < used.length; ) {
            long file = used[u] / slotsPerFile;
            long end = Math.min(next, (file + 1) * slotsPerFile);
            for (long i = file * slotsPerFile; i < end; i++) {
                if (u < used.length && used[u] == i) {
                    while (u < used.length && used[u] == i) {
                        u++;
                    }
                    continue;
                }
                free.arg(Long.toString(SlotAllocator.address(file, (int) (i % slotsPerFile))));
                if (++members == 4096) {
                    redis.send(free, "rebuild free slots");
                    free = Request.cmd(Command.SADD).arg(kFree);
                    members = 0;
                }
            }
        }
        if (members > 0) {
            redis.send(free, "rebuild free slots");
        }
    }

    @Override
    public int usedSlots() {
        Response r = redis.send(Request.cmd(Command.HVALS).arg(kFiles), "used slots");
        int n = 0;
        if (r != null) {
            for (Response v : r) {
                n += v.toInteger();
            }
        }
        return n;
    }

    @Override
    public int files() {
        Response r = redis.send(Request.cmd(Command.HLEN).arg(kFiles), "slot files");
        return r == null ? 0 : r.toInteger();
    }

    @Override
    public boolean[] live(long[] files) {
        boolean[] out = new boolean[files.length];
        if (files.length == 0) {
            return out;
        }
        Request r = Request.cmd(Command.HMGET).arg(kFiles);
        for (long f : files) {
            r.arg(f);
        }
        Response counts = redis.send(r, "slot counts of " + files.length + " files");
        for (int i = 0; i < files.length; i++) {
            Response c = counts.get(i);
            out[i] = c != null && c.toLong() > 0;
        }
        return out;
    }

    @Override
    public void openFilesFrom(long file) {
        redis.eval(OPEN_FROM, keys(), List.of(file, slotsPerFile), "open files from " + file);
    }
}
