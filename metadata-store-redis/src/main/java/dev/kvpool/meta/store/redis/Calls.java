package dev.kvpool.meta.store.redis;

import io.vertx.core.Context;
import io.vertx.core.Future;
import io.vertx.redis.client.Command;
import io.vertx.redis.client.Redis;
import io.vertx.redis.client.Request;
import io.vertx.redis.client.Response;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.LongAdder;

/**
 * Blocking calls over the asynchronous Vert.x client: every call is one round trip (a pipelined batch counts as
 * one), waits at most the configured timeout and turns failures into {@link RedisStoreException}s naming the call.
 * Public so the metadata plane's other shared state in Redis (usage ledger, file slots, leader election) goes
 * through the same guard, timeout and EVALSHA handling.
 */
public final class Calls {
    private final Redis redis;
    private final long timeoutMs;
    private final LongAdder roundTrips = new LongAdder();
    private volatile boolean closed;
    /**
     * Per event-loop thread, a client used only from that thread: a pool picks any idle connection, often one
     * whose socket lives on another loop, and then the request and its answer each cross threads; a client
     * whose connections were all opened from this loop keeps an asynchronous call on it. Null: off.
     */
    private volatile java.util.function.Supplier<Redis> loopClients;
    private final java.util.concurrent.ConcurrentHashMap<Thread, Redis> byLoop = new java.util.concurrent.ConcurrentHashMap<>();

    public Calls(Redis redis, Duration timeout) {
        this.redis = redis;
        this.timeoutMs = Math.max(1, timeout.toMillis());
    }

    /** Later calls fail at once (the store was closed) instead of waiting on a client that may be gone. */
    void close() {
        closed = true;
        byLoop.values().forEach(Redis::close);
        byLoop.clear();
    }

    /** Asynchronous calls from an event loop go through a client of that loop's own, made by the factory. */
    void loopClients(java.util.function.Supplier<Redis> factory) {
        this.loopClients = factory;
    }

    /** The client for an asynchronous call from the current thread. */
    private Redis asyncClient() {
        var f = loopClients;
        if (f == null || !Context.isOnEventLoopThread()) {
            return redis;
        }
        Redis r = byLoop.computeIfAbsent(Thread.currentThread(), t -> f.get());
        if (closed) {
            byLoop.values().forEach(Redis::close); // close() may have run before this client was added
        }
        return r;
    }

    long roundTrips() {
        return roundTrips.sum();
    }

    public Response send(Request r, String what) {
        guard(what);
        roundTrips.increment();
        return await(redis.send(r), what);
    }

    /** Sends the requests pipelined on one connection: one round trip. */
    List<Response> batch(List<Request> rs, String what) {
        if (rs.size() == 1) {
            return java.util.Collections.singletonList(send(rs.getFirst(), what));
        }
        guard(what);
        roundTrips.increment();
        return await(redis.batch(rs), what);
    }

    /**
     * {@link #batch} without waiting, for callers on an event loop: the stage completes on the client's thread, or
     * fails with a {@link RedisStoreException} (including after the timeout).
     */
    java.util.concurrent.CompletableFuture<List<Response>> batchAsync(List<Request> rs, String what) {
        if (closed) {
            return java.util.concurrent.CompletableFuture.failedFuture(closedError(what));
        }
        roundTrips.increment();
        Redis client = asyncClient();
        Future<List<Response>> f = rs.size() == 1 ? client.send(rs.getFirst()).map(java.util.Collections::singletonList)
                : client.batch(rs);
        return timed(f, what);
    }

    /**
     * Most calls {@link #all} and {@link #evalAll} have in flight at once: each may take a pooled connection, and
     * callers beyond the pool wait in a bounded queue (the plane's is 1,024), so a group of thousands of instances
     * goes in waves of this many, a round trip each.
     */
    static final int WAVE = 256;

    /** Answers of {@code wave} applied to consecutive slices of at most {@link #WAVE} items, in order. */
    private static <T> List<Response> inWaves(List<T> items, java.util.function.Function<List<T>, List<Response>> wave) {
        List<Response> out = new java.util.ArrayList<>(items.size());
        for (int i = 0; i < items.size(); i += WAVE) {
            out.addAll(wave.apply(items.subList(i, Math.min(items.size(), i + WAVE))));
        }
        return out;
    }

    /**
     * Sends the requests concurrently, each on its own (they may live on different cluster nodes, which a batch
     * cannot span): one round trip of latency.
     */
    List<Response> all(List<Request> rs, String what) {
        if (rs.size() > WAVE) {
            return inWaves(rs, w -> all(w, what));
        }
        guard(what);
        roundTrips.increment();
        List<Future<Response>> fs = new java.util.ArrayList<>(rs.size());
        rs.forEach(r -> fs.add(redis.send(r)));
        await(Future.all(fs), what);
        List<Response> out = new java.util.ArrayList<>(fs.size());
        fs.forEach(f -> out.add(f.result()));
        return out;
    }

    /**
     * A compare-and-set in native commands on one connection, for writes too large to pass through a script
     * cheaply (every script argument becomes a Lua string and then a command argument again: ~1 µs per field and
     * value pair at 512 pairs). First round trip: WATCH {@code watch}, then {@code reads}; {@code plan} sees
     * their answers and returns the writes, or null when the check failed. Then the second: the writes inside
     * MULTI/EXEC, with {@code alongside} sent at
     * the same time on the pooled client (keys elsewhere in a cluster). Redis runs the writes only when no
     * watched key was changed, deleted or expired since the WATCH, so the check and the writes are as atomic as
     * one script. All keys of {@code watch}, {@code reads} and {@code writes} must share one cluster slot.
     *
     * @return EXEC's answers, one per write, when the writes ran; null when the check failed or a watched key
     *     changed (nothing written)
     */
    List<Response> watched(List<String> watch, List<Request> reads,
                    java.util.function.Function<List<Response>, List<Request>> plan, List<ScriptCall> alongside,
                    String what) {
        guard(what);
        roundTrips.increment();
        io.vertx.redis.client.RedisConnection c = await(redis.connect(), what);
        try {
            // UNWATCH first: a watch left on this pooled connection by an earlier failed attempt would abort EXEC
            List<Request> first = new java.util.ArrayList<>(reads.size() + 2);
            first.add(Request.cmd(Command.UNWATCH));
            Request w = Request.cmd(Command.WATCH);
            watch.forEach(k -> arg(w, k));
            first.add(w);
            first.addAll(reads);
            List<Response> got = await(c.batch(first), what);
            List<Request> writes = plan.apply(got.subList(2, got.size()));
            if (writes == null) {
                return null; // the watch stays until this connection's next WATCH use or EXEC: harmless to others
            }
            Runnable hook = beforeExec;
            if (hook != null) {
                hook.run();
            }
            roundTrips.increment();
            List<Request> second = new java.util.ArrayList<>(writes.size() + 2);
            second.add(Request.cmd(Command.MULTI));
            second.addAll(writes);
            second.add(Request.cmd(Command.EXEC));
            List<Future<Response>> side = new java.util.ArrayList<>(alongside.size());
            alongside.forEach(sc -> side.add(evalFuture(sc, false)));
            Future<List<Response>> tx = c.batch(second);
            List<Future<?>> all = new java.util.ArrayList<>(side);
            all.add(tx);
            try {
                await(Future.join(all), what);
            } catch (RedisStoreException e) {
                if (!all.stream().allMatch(Future::isComplete)) {
                    throw e; // timed out: some may still run
                }
            }
            for (Future<?> f : all) {
                if (f.failed()) {
                    throw new RedisStoreException("Redis " + what + " failed: " + f.cause().getMessage(), f.cause());
                }
            }
            Response exec = tx.result().getLast(); // nil when a watched key changed
            if (exec == null) {
                return null;
            }
            List<Response> out = new java.util.ArrayList<>(exec.size());
            for (int i = 0; i < exec.size(); i++) {
                out.add(exec.get(i));
            }
            return out;
        } finally {
            c.close();
        }
    }

    /** Tests: runs between the check and the EXEC of {@link #watched}, to change a watched key there. */
    volatile Runnable beforeExec;

    /** EVALSHA, sent again as EVAL (a round trip more, counted when asked) when the server lacks the script. */
    private Future<Response> evalFuture(ScriptCall c, boolean countRetry) {
        return redis.send(script(Command.EVALSHA, c.script().sha(), c.keys(), c.args())).recover(e -> {
            if (e.getMessage() == null || !e.getMessage().startsWith("NOSCRIPT")) {
                return Future.failedFuture(e);
            }
            if (countRetry) {
                roundTrips.increment();
            }
            return redis.send(script(Command.EVAL, c.script().body(), c.keys(), c.args()));
        });
    }

    /** One script call of {@link #evalAll}. */
    public record ScriptCall(Lua.Script script, List<?> keys, List<?> args) {
    }

    /**
     * Scripts sent at once, each on its own (their keys may live on different cluster nodes): one round trip of
     * latency. One the server does not know is sent again with its body, alone (it did not run); any other failure
     * is thrown after every call has answered, so the caller knows none is still in flight.
     */
    public List<Response> evalAll(List<ScriptCall> scripts, String what) {
        if (scripts.size() > WAVE) {
            return inWaves(scripts, w -> evalAll(w, what));
        }
        guard(what);
        roundTrips.increment();
        List<Future<Response>> fs = new java.util.ArrayList<>(scripts.size());
        for (ScriptCall c : scripts) {
            fs.add(redis.send(script(Command.EVALSHA, c.script().sha(), c.keys(), c.args())));
        }
        try {
            await(Future.join(fs), what);
        } catch (RedisStoreException e) {
            if (!fs.stream().allMatch(Future::isComplete)) {
                throw e; // timed out: some may still run
            }
        }
        List<Response> out = new java.util.ArrayList<>(fs.size());
        RedisStoreException failed = null;
        for (int i = 0; i < fs.size(); i++) {
            Future<Response> f = fs.get(i);
            if (f.succeeded()) {
                out.add(f.result());
                continue;
            }
            String m = f.cause().getMessage();
            if (m != null && m.startsWith("NOSCRIPT")) {
                ScriptCall c = scripts.get(i);
                out.add(send(script(Command.EVAL, c.script().body(), c.keys(), c.args()), what));
            } else {
                out.add(null);
                if (failed == null) {
                    failed = new RedisStoreException("Redis " + what + " failed: " + m, f.cause());
                }
            }
        }
        if (failed != null) {
            throw failed;
        }
        return out;
    }

    /**
     * EVALSHA, falling back to EVAL when the server lacks the script (first use, SCRIPT FLUSH, a failover or a
     * cluster node that has not seen it yet); EVAL also caches it there. Args are byte[], String or Long.
     */
    public Response eval(Lua.Script s, List<?> keys, List<?> args, String what) {
        try {
            return send(script(Command.EVALSHA, s.sha(), keys, args), what);
        } catch (RedisStoreException e) {
            if (e.getCause() == null || e.getCause().getMessage() == null
                    || !e.getCause().getMessage().startsWith("NOSCRIPT")) {
                throw e;
            }
            return send(script(Command.EVAL, s.body(), keys, args), what);
        }
    }

    /**
     * {@link #eval} without waiting: the stage completes on the client's thread (with the EVAL fallback sent from
     * there), or fails with a {@link RedisStoreException}, also after the timeout. Lets a worker overlap a script
     * with its next blocking call.
     */
    public java.util.concurrent.CompletableFuture<Response> evalAsync(Lua.Script s, List<?> keys, List<?> args,
                                                                       String what) {
        if (closed) {
            return java.util.concurrent.CompletableFuture.failedFuture(closedError(what));
        }
        roundTrips.increment();
        return timed(evalFuture(new ScriptCall(s, keys, args), true), what);
    }

    /**
     * The answer as a stage that fails with a {@link RedisStoreException} on an error or after the timeout. The timer
     * is Vert.x's, on the event loop the answer arrives on: an event-loop caller's call sets and cancels it there,
     * waking no thread. {@code CompletableFuture.orTimeout}'s one shared scheduler thread was woken by nearly every
     * call of a caller that waits for each answer: ~15 µs and a context switch per call on the build VM.
     */
    private <T> java.util.concurrent.CompletableFuture<T> timed(Future<T> f, String what) {
        return f.timeout(timeoutMs, TimeUnit.MILLISECONDS).toCompletionStage().toCompletableFuture()
                .exceptionallyCompose(e -> {
                    Throwable c = e instanceof java.util.concurrent.CompletionException && e.getCause() != null
                            ? e.getCause() : e;
                    return java.util.concurrent.CompletableFuture.failedFuture(c instanceof TimeoutException
                            ? new RedisStoreException("Redis " + what + ": no answer within " + timeoutMs + " ms")
                            : new RedisStoreException("Redis " + what + " failed: " + c.getMessage(), c));
                });
    }

    private static Request script(Command c, String shaOrBody, List<?> keys, List<?> args) {
        Request r = Request.cmd(c).arg(shaOrBody).arg(keys.size());
        keys.forEach(k -> arg(r, k));
        args.forEach(a -> arg(r, a));
        return r;
    }

    static Request arg(Request r, Object a) {
        switch (a) {
            case byte[] b -> r.arg(b);
            case String s -> r.arg(s.getBytes(StandardCharsets.UTF_8));
            case Long l -> r.arg(l);
            case Integer i -> r.arg(i.longValue());
            default -> throw new IllegalArgumentException("unsupported Redis argument type " + a.getClass());
        }
        return r;
    }

    private static IllegalStateException closedError(String what) {
        return new IllegalStateException("Redis " + what + ": the index store is closed");
    }

    /** Checked before anything is sent, so a refused call has no effect on the server. */
    private void guard(String what) {
        if (closed) {
            throw closedError(what);
        }
        if (Context.isOnEventLoopThread()) {
            // blocking here would stall the very loop that must deliver the answer
            throw new IllegalStateException("blocking Redis call (" + what + ") on a Vert.x event loop thread; "
                    + "call the index store from a worker thread");
        }
    }

    private <T> T await(Future<T> f, String what) {
        try {
            return f.toCompletionStage().toCompletableFuture().get(timeoutMs, TimeUnit.MILLISECONDS);
        } catch (TimeoutException e) {
            throw new RedisStoreException("Redis " + what + ": no answer within " + timeoutMs + " ms");
        } catch (ExecutionException e) {
            Throwable c = e.getCause();
            throw new RedisStoreException("Redis " + what + " failed: " + c.getMessage(), c);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new RedisStoreException("Redis " + what + ": interrupted while waiting");
        }
    }

    static boolean nil(Response r) {
        return r == null;
    }

    static byte[] bytes(Response r) {
        return r == null ? null : r.toBytes();
    }
}
