package dev.kvpool.meta.store.redis;

import dev.kvpool.meta.index.BlockState;
import dev.kvpool.meta.index.Transition;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;

/**
 * The server-side scripts. Redis' Lua has only doubles, so packed 64-bit words are never parsed as numbers: values
 * are compared and spliced as binary strings, and the only arithmetic (touch, rewrite) works on the two 32-bit
 * halves of the meta word, which doubles hold exactly.
 *
 * <p>Value of a block field: meta word (8 bytes, big-endian) followed by its locations (word A, word B: 16 bytes
 * each). Compare-and-set scripts check only the location part, so a concurrent {@code touch} (which rewrites the
 * meta word in place) never makes a write retry.
 */
public final class Lua {
    private Lua() {
    }

    /** A script and its SHA1, for EVALSHA with an EVAL fallback when the server does not know it (yet). */
    public record Script(String name, String body, String sha) {
        public static Script of(String name, String body) {
            try {
                byte[] d = MessageDigest.getInstance("SHA-1").digest(body.getBytes(StandardCharsets.UTF_8));
                return new Script(name, body, HexFormat.of().formatHex(d));
            } catch (NoSuchAlgorithmException e) {
                throw new IllegalStateException(e);
            }
        }
    }

    /**
     * Fills the script's status checks in from {@link Transition}'s table, so that the scripts and the Java stores
     * cannot disagree: {@code $FINISH_OK_FROM} and {@code $FINISH_FAILED_FROM} become conditions on the Lua number
     * {@code st} (the location's status), {@code $FINISH_OK_TO} the code it moves to.
     */
    static String statuses(String body) {
        String out = body.replace("$FINISH_OK_FROM", condition(Transition.FINISH_OK, "st"))
                .replace("$FINISH_FAILED_FROM", condition(Transition.FINISH_FAILED, "st"))
                .replace("$FINISH_OK_TO", Integer.toString(Transition.FINISH_OK.to().code()));
        if (out.contains("$FINISH_")) {
            throw new IllegalStateException("a status placeholder left in a script");
        }
        return out;
    }

    /** A Lua condition true when the number in {@code var} is a status the transition applies to. */
    static String condition(Transition t, String var) {
        StringBuilder sb = new StringBuilder("(");
        for (BlockState s : t.from()) {
            sb.append(sb.length() > 1 ? " or " : "").append(var).append(" == ").append(s.code());
        }
        return sb.append(')').toString();
    }

    static {
        // the finish script serves in place and removes on failure: the table must keep those shapes
        if (Transition.FINISH_OK.removes() || !Transition.FINISH_FAILED.removes()) {
            throw new IllegalStateException("the finish script assumes FINISH_OK serves and FINISH_FAILED removes");
        }
    }

    /** Entries the change stream of an instance keeps (approximately: trimmed with {@code MAXLEN ~}). */
    static final int MIRROR_MAXLEN = 1000;

    /**
     * The change stream that replica-local copies of the index follow ({@link RedisMirror}): kept only while the
     * instance's sequence counter exists (a replica with the copy turned on creates it), so that every replica's
     * scripts feed it, whatever their own settings. An entry is {@code q <number> c <changes>} or {@code q <number>
     * ! clear|drop}; numbered by the counter, so a follower sees a gap. The changes are one string, per field:
     * the 8-byte field, its value's length in 2 bytes (0: the field was deleted), the value (see {@link
     * RedisMirror#decode}): one string per entry costs Redis a copy, where a stream field per block would cost it
     * a listpack element to write and a reply element to send, each. {@code mirror(stream, counter, sets, dels)}
     * appends what a script wrote and returns its number, or 0 when nothing was appended; {@code mirror_put}
     * appends a prepared entry.
     */
    private static final String MIRROR = """
            local function mirror_put(stream, counter, kind, payload)
              local seq = redis.call('INCR', counter)
              -- formatted here: numbers start from the clock in µs (see MIRROR_HEAD), too long for Lua's own
              redis.call('XADD', stream, 'MAXLEN', '~', %d, '*', 'q', string.format('%%d', seq), kind, payload)
              return seq
            end
            local function mirror(stream, counter, sets, dels)
              if #sets + #dels == 0 or redis.call('EXISTS', counter) == 0 then return 0 end
              local parts, gone = {}, string.char(0, 0)
              for i = 1, #sets, 2 do
                local v = sets[i + 1]
                parts[#parts + 1] = sets[i] .. string.char(math.floor(#v / 256), #v %% 256) .. v
              end
              for i = 1, #dels do parts[#parts + 1] = dels[i] .. gone end
              return mirror_put(stream, counter, 'c', table.concat(parts))
            end
            """.formatted(MIRROR_MAXLEN);

    private static final String COMMON = """
            local function u32(s, i)
              local a, b, c, d = string.byte(s, i, i + 3)
              return ((a * 256 + b) * 256 + c) * 256 + d
            end
            local function p32(x)
              return string.char(math.floor(x / 16777216) % 256, math.floor(x / 65536) % 256,
                                 math.floor(x / 256) % 256, x % 256)
            end
            -- expectation: '' absent, '=' .. locs present with exactly these locations
            local function matches(cur, exp)
              if exp == '' then return not cur end
              return cur and string.sub(cur, 9) == string.sub(exp, 2) or false
            end
            -- one HMGET for many fields (chunks stay below Lua's unpack limit): far cheaper than HGET per field
            local function mget(h, fields)
              local out = {}
              for s = 1, #fields, 4000 do
                local e = math.min(#fields, s + 3999)
                local r = redis.call('HMGET', h, unpack(fields, s, e))
                for j = 1, #r do out[s + j - 1] = r[j] end
              end
              return out
            end
            -- pending writes: field -> new value, or false to delete; a later read of the same field sees them
            local pend = {}
            local function cur_of(f, read)
              local p = pend[f]
              if p ~= nil then return p end
              return read
            end
            -- update: '' none, '-' delete, 'N' .. value, 'L' .. locs (meta kept)
            local function apply(h, f, cur, upd)
              local t = string.sub(upd, 1, 1)
              if t == '-' then pend[f] = false
              elseif t == 'N' then pend[f] = string.sub(upd, 2)
              elseif t == 'L' then pend[f] = string.sub(cur, 1, 8) .. string.sub(upd, 2)
              end
            end
            -- one HSET and one HDEL for everything pending
            -- one command over a long argument list, in chunks below Lua's unpack limit (sets: field, value pairs)
            local function chunked(cmd, h, list)
              for c = 1, #list, 4000 do redis.call(cmd, h, unpack(list, c, math.min(#list, c + 3999))) end
            end
            local function flush(h)
              local sets, dels = {}, {}
              for f, v in pairs(pend) do
                if v then
                  sets[#sets + 1] = f
                  sets[#sets + 1] = v
                else
                  dels[#dels + 1] = f
                end
              end
              chunked('HSET', h, sets)
              chunked('HDEL', h, dels)
              pend = {}
              return sets, dels
            end
            -- compare-and-set over (field, expectation, update) triples of ARGV from index first: all or nothing
            local function cas(h, first)
              local fields = {}
              for i = first, #ARGV, 3 do fields[#fields + 1] = ARGV[i] end
              local got = mget(h, fields)
              for i = first, #ARGV, 3 do
                if not matches(got[(i - first) / 3 + 1], ARGV[i + 1]) then return false end
              end
              for i = first, #ARGV, 3 do
                apply(h, ARGV[i], cur_of(ARGV[i], got[(i - first) / 3 + 1]), ARGV[i + 2])
              end
              local sets, dels = flush(h)
              return true, sets, dels
            end
            """ + MIRROR;


    /**
     * startWrite when replicas are counted (minReplicas > 1; {@link #START_ABSENT} otherwise). KEYS: live, blocks,
     * session set, session key, taint counter (raised when a present field changes: see {@link #FINISH_FAST}). ARGV: incarnation, session id, PXAT, maxKeys, session header, then per distinct key
     * (field, expectation, update, session chunk): Java's compare-and-set decisions. Returns {1, inserted flags} |
     * {-1} conflict | {-2} dropped | {-3} capacity | {-4} session already there.
     */
    static final Script START = Script.of("start", COMMON + """
            if redis.call('GET', KEYS[1]) ~= ARGV[1] then return {-2} end
            if redis.call('EXISTS', KEYS[4]) == 1 then return {-4} end
            local curs, ins, newKeys = {}, {}, 0
            local fields = {}
            for i = 6, #ARGV, 4 do fields[#fields + 1] = ARGV[i] end
            local got = mget(KEYS[2], fields)
            for i = 6, #ARGV, 4 do
              local cur = got[(i - 6) / 4 + 1]
              local exp, upd = ARGV[i + 1], ARGV[i + 2]
              curs[i] = cur
              if not matches(cur, exp) then return {-1} end
              ins[i] = upd ~= ''
              if ins[i] and not cur then newKeys = newKeys + 1 end
            end
            local maxKeys = tonumber(ARGV[4])
            if newKeys > 0 and maxKeys > 0 and redis.call('HLEN', KEYS[2]) + newKeys > maxKeys then return {-3} end
            local chunks, flags, taint = {}, {}, false
            for i = 6, #ARGV, 4 do
              if ins[i] then
                if curs[i] then taint = true end
                apply(KEYS[2], ARGV[i], cur_of(ARGV[i], curs[i]), ARGV[i + 2])
                chunks[#chunks + 1] = ARGV[i + 3]
                flags[#flags + 1] = '1'
              else
                flags[#flags + 1] = '0'
              end
            end
            flush(KEYS[2])
            if taint then redis.call('INCR', KEYS[5]) end
            redis.call('SET', KEYS[4], ARGV[5] .. table.concat(chunks), 'PXAT', ARGV[3])
            redis.call('SADD', KEYS[3], ARGV[2])
            return {1, table.concat(flags)}
            """);

    /**
     * startWrite when any replica counts (minReplicas ≤ 1): a key is inserted when absent. KEYS: live, blocks,
     * session set, session key, taint counter. ARGV: incarnation, session id, PXAT, maxKeys, session blob (header,
     * then a chunk per key), then per distinct key (field, value). Kept apart from {@link #START} because it is the
     * common case and needs no per-key decision beyond presence: the Lua work per key is a table entry. Returns as
     * START, plus the taint counter as it was ('' when never raised) for a {@link #FINISH_FAST} of this session.
     */
    static final Script START_ABSENT = Script.of("start-absent", COMMON + """
            if redis.call('GET', KEYS[1]) ~= ARGV[1] then return {-2} end
            if redis.call('EXISTS', KEYS[4]) == 1 then return {-4} end
            local n = (#ARGV - 5) / 2
            local fields = {}
            for i = 1, n do fields[i] = ARGV[4 + 2 * i] end
            local got = mget(KEYS[2], fields)
            local flags, added = {}, 0
            for i = 1, n do
              if got[i] then
                flags[i] = '0'
              else
                flags[i] = '1'
                added = added + 1
              end
            end
            local maxKeys = tonumber(ARGV[4])
            if added > 0 and maxKeys > 0 and redis.call('HLEN', KEYS[2]) + added > maxKeys then return {-3} end
            if added == n then
              -- all new (the usual case): the (field, value) pairs go from ARGV as they are
              for c = 6, #ARGV, 4000 do redis.call('HSET', KEYS[2], unpack(ARGV, c, math.min(#ARGV, c + 3999))) end
            elseif added > 0 then
              local sets = {}
              for i = 1, n do
                if flags[i] == '1' then
                  sets[#sets + 1] = fields[i]
                  sets[#sets + 1] = ARGV[5 + 2 * i]
                end
              end
              chunked('HSET', KEYS[2], sets)
            end
            local blob = ARGV[5]
            if added < n then
              local parts = {string.sub(blob, 1, 16)}
              for i = 1, n do
                if flags[i] == '1' then parts[#parts + 1] = string.sub(blob, 1 + i * 16, 16 + i * 16) end
              end
              blob = table.concat(parts)
            end
            redis.call('SET', KEYS[4], blob, 'PXAT', ARGV[3])
            redis.call('SADD', KEYS[3], ARGV[2])
            return {1, table.concat(flags), redis.call('GET', KEYS[5]) or ''}
            """);

    /**
     * finishWrite in one step: reads the session, decides every location itself, writes and closes. KEYS: blocks,
     * session set, session key, change stream, its counter (see {@link #MIRROR}). ARGV: session id, wrel, how the mask must fit ('1' exactly the session's
     * length, '0' at most, '2' any), the mask as '1'/'0' per location (missing ones fail). A location is this session's when it still has the
     * session's id and a status {@link Transition#FINISH_OK} / {@link Transition#FINISH_FAILED} applies to (WRITING:
     * a DELETING one belongs to its deleter); success makes it SERVING with write time wrel, failure removes it. Returns nil (no such session) or {session blob, served, fits 1|0, change number (0: none),
     * then per failed location: field .. word A .. word B .. '1' when the key went, else '0'}.
     */
    static final Script FINISH = Script.of("finish", statuses(COMMON + """
            local s = redis.call('GET', KEYS[3])
            if not s then return false end
            local n = (#s - 16) / 16
            local mask = ARGV[4]
            local fits = #mask == n or (ARGV[3] == '0' and #mask < n) or ARGV[3] == '2'
            local wrel = tonumber(ARGV[2])
            -- the meta's new high half, by its low 2 bits (the write time fills bits 2-31): 4 strings, not one per key
            local hiw = {}
            for k = 0, 3 do hiw[k] = p32(wrel * 4 + k) end
            local fields = {}
            for i = 1, n do
              local q = 1 + i * 16
              fields[i] = string.sub(s, q, q + 7)
            end
            local got = mget(KEYS[1], fields)
            local out = {s, 0, fits and 1 or 0, 0}
            local served = 0
            -- a session's keys are distinct: the writes go straight into one HSET and one HDEL
            local sets, dels = {}, {}
            for i = 1, n do
              local v = got[i]
              if v then
                -- the location id: the low 2 bits of byte 3 and bytes 4-8 of word A, compared as numbers (no
                -- substrings: every string Lua makes is hashed and interned)
                local i3, i4, i5, i6, i7, i8 = string.byte(s, 11 + i * 16, 16 + i * 16)
                i3 = i3 % 4
                for p = 9, #v, 16 do
                  local b3, b4, b5, b6, b7, b8 = string.byte(v, p + 2, p + 7)
                  if b8 == i8 and b7 == i7 and b6 == i6 and b5 == i5 and b4 == i4 and b3 % 4 == i3 then
                    -- the status: bits 2-4 of byte 3 (bits 42-44 of word A); the checks come from Transition's table
                    local st = math.floor(b3 / 4) % 8
                    if fits and string.byte(mask, i) == 49 then
                      if $FINISH_OK_FROM then
                        -- the new status is (to - st) * 4 more in byte 3; write time in bits 2-31 of the meta's high half
                        sets[#sets + 1] = fields[i]
                        sets[#sets + 1] = hiw[string.byte(v, 4) % 4] .. string.sub(v, 5, p + 1)
                                          .. string.char(b3 + ($FINISH_OK_TO - st) * 4) .. string.sub(v, p + 3)
                        served = served + 1
                      end
                    elseif $FINISH_FAILED_FROM then
                      local rest = string.sub(v, 9, p - 1) .. string.sub(v, p + 16)
                      if rest == '' then
                        dels[#dels + 1] = fields[i]
                      else
                        sets[#sets + 1] = fields[i]
                        sets[#sets + 1] = string.sub(v, 1, 8) .. rest
                      end
                      out[#out + 1] = fields[i] .. string.sub(v, p, p + 15) .. (rest == '' and '1' or '0')
                    end
                    break
                  end
                end
              end
            end
            chunked('HSET', KEYS[1], sets)
            chunked('HDEL', KEYS[1], dels)
            redis.call('DEL', KEYS[3])
            redis.call('SREM', KEYS[2], ARGV[1])
            out[2] = served
            out[4] = mirror(KEYS[4], KEYS[5], sets, dels)
            return out
            """));

    /**
     * markDeleting, purge. KEYS: blocks, taint counter, change stream, its counter. ARGV: '1' when a field written
     * holds a WRITING location (raises the taint counter, see {@link #FINISH_FAST}), else '0'; then (field,
     * expectation, update) triples. Returns {1, change number (0: none)} | -1.
     */
    static final Script CAS = Script.of("cas", COMMON + """
            local ok, sets, dels = cas(KEYS[1], 2)
            if not ok then return -1 end
            if ARGV[1] == '1' then redis.call('INCR', KEYS[2]) end
            return {1, mirror(KEYS[3], KEYS[4], sets, dels)}
            """);

    /**
     * finishWrite by the replica that started the session, without reading a block. A session started by
     * {@link #START_ABSENT} inserted only absent keys, so each of its fields holds exactly the value the start
     * wrote, until something other than this finish changes it. Every such change of a field holding a WRITING
     * location (a compare-and-set that marks or purges, a replica-counting start that adds a location) raises the
     * instance's taint counter in the same script; expiry, clear and drop delete the session. So when the session
     * is still this one (its header) and the counter is what the start saw, the new values the caller computed
     * are exact and go in blind: one HSET, one HDEL, no per-key Lua work. Otherwise nothing is written and the
     * caller runs {@link #FINISH}. (A touch, which rewrites only the meta word, may be overwritten: a WRITING
     * block is never a hit, so only a touch queued for an earlier block of the same key is lost.)
     * KEYS: blocks, session set, session key, taint counter, change stream, its counter. ARGV: session id, session
     * header, counter, number of (field, value) pairs, the change stream's entry as Java encoded it ('' when this
     * replica keeps no copy: then the script encodes it when the stream is on), the pairs, then the fields to
     * delete. Returns {1, change number (0: none)} done | 0 not this session or tainted.
     */
    static final Script FINISH_FAST = Script.of("finish-fast", MIRROR + """
            local s = redis.call('GET', KEYS[3])
            if not s or string.sub(s, 1, 16) ~= ARGV[2] then return 0 end
            if (redis.call('GET', KEYS[4]) or '') ~= ARGV[3] then return 0 end
            local last = 5 + 2 * tonumber(ARGV[4])
            for c = 6, last, 4000 do redis.call('HSET', KEYS[1], unpack(ARGV, c, math.min(last, c + 3999))) end
            for c = last + 1, #ARGV, 4000 do redis.call('HDEL', KEYS[1], unpack(ARGV, c, math.min(#ARGV, c + 3999))) end
            redis.call('DEL', KEYS[3])
            redis.call('SREM', KEYS[2], ARGV[1])
            if redis.call('EXISTS', KEYS[6]) == 0 then return {1, 0} end
            if ARGV[5] ~= '' then return {1, mirror_put(KEYS[5], KEYS[6], 'c', ARGV[5])} end
            local sets, dels = {}, {}
            for c = 6, last do sets[#sets + 1] = ARGV[c] end
            for c = last + 1, #ARGV do dels[#dels + 1] = ARGV[c] end
            return {1, mirror(KEYS[5], KEYS[6], sets, dels)}
            """);

    /**
     * touch. KEYS: blocks. ARGV: access time (relative seconds), then (field, hits, random 0..2^32-1) triples.
     * Each hit grows the counter with probability 1/2^counter, as {@code Loc.touched}: the top f bits of a
     * uniform 32-bit r are all zero; further hits of one key draw from a 32-bit LCG seeded with its random.
     */
    static final Script TOUCH = Script.of("touch", COMMON + """
            local arel = tonumber(ARGV[1])
            local ahi, alo = math.floor(arel / 268435456), (arel % 268435456) * 16
            local fields = {}
            for i = 2, #ARGV, 3 do fields[#fields + 1] = ARGV[i] end
            local got = mget(KEYS[1], fields)
            for i = 2, #ARGV, 3 do
              local v = cur_of(ARGV[i], got[(i - 2) / 3 + 1])
              if v then
                local hi = u32(v, 1)
                local f = u32(v, 5) % 16
                local r = tonumber(ARGV[i + 2])
                for _ = 1, tonumber(ARGV[i + 1]) do
                  if f >= 15 then break end
                  if math.floor(r / 2 ^ (32 - f)) == 0 then f = f + 1 end
                  r = (r * 69069 + 1) % 4294967296
                end
                pend[ARGV[i]] = p32(hi - hi % 4 + ahi) .. p32(alo + f) .. string.sub(v, 9)
              end
            end
            flush(KEYS[1])
            return 0
            """);

    /**
     * Open sessions of an instance. KEYS: session set, expired-unclosed set. ARGV: session key prefix. Returns {id,
     * blob, ...}. An id whose session Redis expired moves to the expired-unclosed set: its WRITING locations are
     * orphans, and the set tells the leader which instance to sweep (instead of sweeping every index blindly).
     */
    static final Script SESSION_LIST = Script.of("session-list", """
            local out = {}
            for _, id in ipairs(redis.call('SMEMBERS', KEYS[1])) do
              local s = redis.call('GET', ARGV[1] .. id)
              if s then
                out[#out + 1] = id
                out[#out + 1] = s
              else
                redis.call('SMOVE', KEYS[1], KEYS[2], id) -- expired by its PEXPIREAT, never closed
              end
            end
            return out
            """);

    /**
     * The open sessions of an instance that are due: deadline (the blob's first 8 bytes, big-endian) at or before
     * ARGV[2] ms. KEYS and ARGV[1] as {@link #SESSION_LIST}, which it follows for a session Redis expired. Reads
     * only the 8-byte header of a session not yet due, so expiry no longer copies every open session each period.
     */
    static final Script SESSIONS_DUE = Script.of("sessions-due", """
            local out = {}
            local now = tonumber(ARGV[2])
            for _, id in ipairs(redis.call('SMEMBERS', KEYS[1])) do
              local k = ARGV[1] .. id
              local h = redis.call('GETRANGE', k, 0, 7)
              if #h < 8 then
                redis.call('SMOVE', KEYS[1], KEYS[2], id) -- expired by its PEXPIREAT, never closed
              elseif struct.unpack('>i8', h) <= now then
                out[#out + 1] = id
                out[#out + 1] = redis.call('GET', k)
              end
            end
            return out
            """);

    /**
     * clear / drop. KEYS: live, blocks, session set, expired-unclosed set, taint counter, change stream, its
     * counter. ARGV: incarnation (clear only), session key prefix, 'clear' or 'drop'. Returns the sessions it
     * removed {id, blob, ...}, or nil when clear found the index dropped. The change stream gets a marker ('!' and
     * the word); after a drop it and its counter expire a minute later, once every follower has seen the marker.
     */
    static final Script WIPE = Script.of("wipe", MIRROR + """
            if ARGV[3] == 'clear' and redis.call('GET', KEYS[1]) ~= ARGV[1] then return false end
            local out = {}
            for _, id in ipairs(redis.call('SMEMBERS', KEYS[3])) do
              local k = ARGV[2] .. id
              local s = redis.call('GET', k)
              if s then
                out[#out + 1] = id
                out[#out + 1] = s
                redis.call('DEL', k)
              end
            end
            redis.call('UNLINK', KEYS[2], KEYS[3], KEYS[4])
            if ARGV[3] == 'drop' then redis.call('DEL', KEYS[1], KEYS[5]) end
            if redis.call('EXISTS', KEYS[7]) == 1 then
              mirror_put(KEYS[6], KEYS[7], '!', ARGV[3])
              if ARGV[3] == 'drop' then
                redis.call('PEXPIRE', KEYS[6], 60000)
                redis.call('PEXPIRE', KEYS[7], 60000)
              end
            end
            return out
            """);

    /**
     * Where a follower of the change stream starts ({@link RedisMirror}): turns the stream on (creates the counter)
     * and returns {counter, id of the last entry or '0-0'}, in one step so that the two agree. A new counter starts
     * from the clock in µs, so that one created again (lost, evicted) numbers above every earlier one: followers
     * see a jump, not a sequence that goes on. KEYS: change stream, its counter.
     */
    static final Script MIRROR_HEAD = Script.of("mirror-head", """
            if redis.call('EXISTS', KEYS[2]) == 0 then
              local t = redis.call('TIME')
              redis.call('SET', KEYS[2], t[1] .. string.format('%06d', tonumber(t[2])))
            end
            redis.call('PERSIST', KEYS[2])
            local last = redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', 1)
            return {tonumber(redis.call('GET', KEYS[2])), last[1] and last[1][1] or '0-0'}
            """);

    /**
     * One change entry built by Java ({@link RedisMirror#encode}), appended when the stream is on, for the native
     * finish's transaction (EVAL inside MULTI: the number is taken when EXEC runs, so nothing is watched for it).
     * KEYS: change stream, its counter. ARGV: the entry. Returns its number, or 0 when the stream is off.
     */
    static final Script MIRROR_APPEND = Script.of("mirror-append", MIRROR + """
            if redis.call('EXISTS', KEYS[2]) == 0 then return 0 end
            return mirror_put(KEYS[1], KEYS[2], 'c', ARGV[1])
            """);

    /** Raises a number kept in a key to at least ARGV[1]. KEYS: the key. Returns the value now. */
    static final Script RAISE = Script.of("raise", """
            local v = tonumber(redis.call('GET', KEYS[1]) or '0') or 0
            if tonumber(ARGV[1]) > v then
              redis.call('SET', KEYS[1], ARGV[1])
              return tonumber(ARGV[1])
            end
            return v
            """);

    /** The incarnation of an instance, created when absent. KEYS: live. ARGV: a fresh incarnation. */
    static final Script ENSURE = Script.of("ensure", """
            local v = redis.call('GET', KEYS[1])
            if v then return v end
            redis.call('SET', KEYS[1], ARGV[1])
            return ARGV[1]
            """);

    /** Claims a session id for an instance. KEYS: owner key. ARGV: owner value, PXAT. Returns OK or nil. */
    static final Script CLAIM = Script.of("claim", """
            return redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PXAT', ARGV[2])
            """);

    /**
     * Releases a session id claimed by an instance, whatever claim token it carries (a finish no longer reads the
     * session before it runs). KEYS: owner key. ARGV: instance id. Returns 1 when deleted.
     */
    static final Script RELEASE_OWNER = Script.of("release-owner", """
            local v = redis.call('GET', KEYS[1])
            if v and #v == 16 + #ARGV[1] and string.sub(v, 17) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
            return 0
            """);

    /** Compare-and-delete. KEYS: key. ARGV: expected value. Returns 1 when deleted. */
    static final Script COMPARE_DEL = Script.of("compare-del", """
            if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
            return 0
            """);

    /** Compare-and-pexpire. KEYS: key. ARGV: expected value, milliseconds. Returns 1 when renewed. */
    static final Script COMPARE_PEXPIRE = Script.of("compare-pexpire", """
            if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
            return 0
            """);
}
