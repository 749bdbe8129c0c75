package dev.kvpool.agent.sched;

import dev.kvpool.agent.pool.Device;
import dev.kvpool.api.time.Monotonic;
import java.lang.foreign.MemorySegment;
import java.time.InstantSource;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/**
 * The one thread that drives one device. Reads before writes: every pending read is issued (as one batch) before
 * any write; reads and writes never run on the device at the same time (one thread, one batch at a time). Writes
 * come in two kinds: <em>urgent</em> (the first tier of a save: the engine waits on them) run as soon as no read
 * is pending; <em>deferred</em> (write-behind to lower tiers) are drained in bounded chunks only when the
 * {@link IdleWindowEstimator} predicts an idle window, or when the backlog passes its high-water mark. A read that
 * arrives while a chunk runs waits for that one chunk only, never for the queued writes behind it.
 *
 * <p>Where the device has a {@link Device.Pipeline} (our io_uring), requests stream: ops of the next request of the
 * same direction enter as those of the previous one complete, so the queue depth stays in flight across requests
 * instead of draining to zero at the end of each batch. The direction changes only when nothing is in flight; a read
 * that arrives while writes stream stops further write ops from being offered (the rest of their request waits,
 * parked, until no read is pending), so it waits for at most the queue depth of writes.
 */
public final class DeviceWorker implements AutoCloseable {
    /** One queued request. */
    private static final class Req {
        final boolean write;
        final long[] slots;
        final MemorySegment[] bufs;
        final CompletableFuture<boolean[]> done = new CompletableFuture<>();

        Req(boolean write, long[] slots, MemorySegment[] bufs) {
            this.write = write;
            this.slots = slots;
            this.bufs = bufs;
        }
    }

    /** A hook to observe what the device executes (tests). */
    public interface Observer {
        void executing(boolean write, int ops, long startNanos, long endNanos);
    }

    private final Device device;
    private final ReentrantLock lock = new ReentrantLock();
    private final Condition work = lock.newCondition();
    private final ArrayDeque<Req> reads = new ArrayDeque<>();
    private final ArrayDeque<Req> urgent = new ArrayDeque<>();
    private final ArrayDeque<Req> deferred = new ArrayDeque<>();
    private final IdleWindowEstimator idle;
    private final int chunkOps;
    private final int highWater;
    private final int maxBatchOps;
    private final Thread thread;
    private volatile boolean running = true;
    private volatile Observer observer;
    private final AtomicInteger active = new AtomicInteger();
    private final AtomicLong readOps = new AtomicLong(), writeOps = new AtomicLong(), readBytes = new AtomicLong(),
            writeBytes = new AtomicLong(), forcedDrains = new AtomicLong();
    private int deferredOps;
    /**
     * What liveness is measured on ({@link Monotonic#SOURCE}; tests: a clock they move). Scheduling (the idle
     * window, chunk timings, the observer) stays on System.nanoTime: the worker waits through it for real.
     */
    private final InstantSource clock;
    /**
     * When work last completed on this device, or became due on an idle one (nanos of {@link #clock}): due work
     * that sees no progress for long is a wedged worker (liveness), however busy the rest of the agent is.
     */
    private volatile long progressAt;
    /** What ended the worker thread while it was meant to run (null while it runs, or after a close). */
    private volatile Throwable died;

    /** A request admitted to a pipelined device: ops offered so far, ops not yet completed. */
    private static final class Active {
        final Req req;
        final boolean write;
        final boolean[] ok;
        final long t0 = System.nanoTime();
        int next;
        int left;

        Active(Req req) {
            this.req = req;
            this.write = req.write;
            this.ok = new boolean[req.slots.length];
            this.left = req.slots.length;
        }
    }

    /**
     * @param chunkOps deferred writes issued per chunk (bounds how long a read can wait behind one)
     * @param highWater deferred ops after which writes drain even inside read bursts
     */
    public DeviceWorker(Device device, int chunkOps, int highWater, long guardNanos, int maxBatchOps) {
        this(device, chunkOps, highWater, guardNanos, maxBatchOps, Monotonic.SOURCE);
    }

    /** @param clock what {@link #health()}'s stall is measured on (tests: a clock they move) */
    public DeviceWorker(Device device, int chunkOps, int highWater, long guardNanos, int maxBatchOps,
                        InstantSource clock) {
        this.device = device;
        this.clock = clock;
        this.progressAt = Monotonic.nanos(clock);
        this.chunkOps = Math.max(1, chunkOps);
        this.highWater = Math.max(this.chunkOps, highWater);
        this.maxBatchOps = Math.max(1, maxBatchOps);
        this.idle = new IdleWindowEstimator(guardNanos);
        Device.Pipeline p = device.pipeline();
        Runnable body = p == null ? this::loop : () -> stream(p);
        this.thread = Thread.ofPlatform().daemon().name("kvpool-dev-" + device.id()).start(() -> {
            try {
                body.run();
            } catch (Throwable t) {
                died = t; // the device's requests would wait forever: liveness says so, naming this
                throw t;
            }
        });
    }

    public DeviceWorker(Device device) {
        this(device, 4, 4096, 500_000, 64);
    }

    public Device device() {
        return device;
    }

    public void observer(Observer o) {
        this.observer = o;
    }

    public CompletableFuture<boolean[]> read(long[] slots, MemorySegment[] bufs) {
        return enqueue(reads, new Req(false, slots, bufs));
    }

    /** A first-tier write: runs as soon as no read is pending. */
    public CompletableFuture<boolean[]> writeNow(long[] slots, MemorySegment[] bufs) {
        return enqueue(urgent, new Req(true, slots, bufs));
    }

    /** A write-behind: drained in idle windows. */
    public CompletableFuture<boolean[]> writeDeferred(long[] slots, MemorySegment[] bufs) {
        return enqueue(deferred, new Req(true, slots, bufs));
    }

    private CompletableFuture<boolean[]> enqueue(ArrayDeque<Req> q, Req r) {
        lock.lock();
        try {
            if (!running) {
                r.done.completeExceptionally(new IllegalStateException("device " + device.id() + " closed"));
                return r.done;
            }
            if (q == reads && reads.isEmpty()) {
                idle.readArrived(System.nanoTime());
            }
            boolean wasDue = due();
            q.add(r);
            if (q == deferred) {
                deferredOps += r.slots.length;
            }
            if (!wasDue && due()) {
                progressAt = Monotonic.nanos(clock); // an idle device: the wait for progress starts now
            }
            work.signal();
        } finally {
            lock.unlock();
        }
        return r.done;
    }

    private void loop() {
        while (running) {
            List<Req> batch = new ArrayList<>();
            boolean write;
            lock.lock();
            try {
                Boolean w = nextWork(batch, false);
                if (w == null) {
                    return;
                }
                write = w;
            } catch (InterruptedException e) {
                return;
            } finally {
                lock.unlock();
            }
            execute(write, batch);
        }
    }

    /**
     * Waits (lock held) for work and takes it into {@code into}: reads first, then parked writes (streaming only;
     * nothing is taken for them), urgent writes, deferred writes once an idle window opens or the high water is
     * reached. Returns whether the work is writes, or null once stopped.
     */
    private Boolean nextWork(List<Req> into, boolean parkedWrites) throws InterruptedException {
        while (true) {
            if (!running) {
                return null;
            }
            if (!reads.isEmpty()) {
                drain(reads, into);
                return false;
            }
            if (parkedWrites) {
                return true;
            }
            if (!urgent.isEmpty()) {
                drain(urgent, into);
                return true;
            }
            if (!deferred.isEmpty()) {
                long wait = deferredOps >= highWater ? 0 : idle.waitBeforeWrite(System.nanoTime());
                if (wait <= 0) {
                    if (deferredOps >= highWater) {
                        forcedDrains.incrementAndGet();
                    }
                    chunk(into);
                    return true;
                }
                work.awaitNanos(wait);
            } else {
                work.await(100, TimeUnit.MILLISECONDS);
            }
        }
    }

    // ---- streaming over a pipelined device (worker thread only) ----------------------------------------------

    private void stream(Device.Pipeline p) {
        int depth = Math.max(1, p.depth());
        Active[] owner = new Active[depth];
        int[] opOf = new int[depth];
        int[] freeTags = new int[depth];
        int free = depth;
        for (int i = 0; i < depth; i++) {
            freeTags[i] = depth - 1 - i;
        }
        ArrayDeque<Active> feed = new ArrayDeque<>();   // admitted, not every op offered yet
        ArrayDeque<Active> parked = new ArrayDeque<>(); // writes stopped for a read; resume when no read waits
        List<Active> finished = new ArrayList<>();
        List<Req> taken = new ArrayList<>();
        int unoffered = 0, inFlight = 0;
        boolean dirWrite = false, readsWaiting;
        while (true) {
            taken.clear();
            lock.lock();
            try {
                boolean idleDevice = inFlight == 0 && feed.isEmpty();
                if (!running) {
                    if (idleDevice && parked.isEmpty()) {
                        return; // every admitted op done: no buffer is still in the kernel's hands
                    }
                } else if (idleDevice) {
                    // the device is empty: pick the direction as the batch loop does, parked writes before new ones
                    Boolean w = nextWork(taken, !parked.isEmpty());
                    if (w != null) {
                        dirWrite = w;
                    }
                }
                if (running && (!taken.isEmpty() || !idleDevice)) {
                    topUp(dirWrite, depth - unoffered - ops(taken), taken);
                }
                readsWaiting = !reads.isEmpty();
            } catch (InterruptedException e) {
                return;
            } finally {
                lock.unlock();
            }
            if (inFlight == 0 && feed.isEmpty() && taken.isEmpty() && !parked.isEmpty() && (!readsWaiting || !running)) {
                dirWrite = true; // nothing in flight: the parked writes resume
                for (Active a : parked) {
                    unoffered += a.req.slots.length - a.next;
                }
                feed.addAll(parked);
                parked.clear();
            }
            for (Req r : taken) {
                if (r.write != dirWrite) {
                    throw new IllegalStateException("direction change with ops in flight on device " + device.id());
                }
                Active a = new Active(r);
                active.incrementAndGet();
                if (a.left == 0) {
                    finished.add(a);
                } else {
                    feed.add(a);
                    unoffered += a.left;
                }
            }
            if (dirWrite && readsWaiting && !feed.isEmpty()) {
                for (Active a : feed) {
                    unoffered -= a.req.slots.length - a.next;
                }
                parked.addAll(feed); // a read waits: offer no more writes; they resume after the reads
                feed.clear();
            }
            try {
                while (!feed.isEmpty() && free > 0) {
                    Active a = feed.peek();
                    int tag = freeTags[--free];
                    if (!p.offer(a.write, a.req.slots[a.next], a.req.bufs[a.next], tag)) {
                        free++;
                        break;
                    }
                    owner[tag] = a;
                    opOf[tag] = a.next++;
                    unoffered--;
                    inFlight++;
                    if (a.next == a.req.slots.length) {
                        feed.poll();
                    }
                }
                if (inFlight > 0) {
                    int[] freeBox = {free};
                    int n = p.poll(true, (tag, res) -> {
                        int t = (int) tag;
                        Active a = owner[t];
                        owner[t] = null;
                        freeTags[freeBox[0]++] = t;
                        int i = opOf[t];
                        a.ok[i] = res == a.req.bufs[i].byteSize();
                        if (--a.left == 0) {
                            finished.add(a);
                        }
                    });
                    free = freeBox[0];
                    inFlight -= n;
                    if (n > 0) {
                        progressAt = Monotonic.nanos(clock);
                    }
                }
            } catch (Throwable t) {
                // the ring failed: every admitted request fails; nothing more can be known of its ops
                failAll(t, owner, feed, parked);
                java.util.Arrays.fill(owner, null);
                for (int i = 0; i < depth; i++) {
                    freeTags[i] = depth - 1 - i;
                }
                free = depth;
                inFlight = 0;
                unoffered = 0;
            }
            if (!finished.isEmpty()) {
                complete(finished, inFlight == 0 && feed.isEmpty());
                finished.clear();
            }
        }
    }

    /**
     * Admits more requests of the current direction while fewer than {@code room} more ops are needed to keep the
     * pipeline full; writes only while no read waits (deferred ones only inside an idle window). Caller holds the lock.
     */
    private void topUp(boolean write, int room, List<Req> taken) {
        while (room > 0) {
            int before = taken.size();
            if (!write) {
                if (!reads.isEmpty()) {
                    drain(reads, taken);
                }
            } else if (reads.isEmpty()) {
                if (!urgent.isEmpty()) {
                    drain(urgent, taken);
                } else if (!deferred.isEmpty()
                        && (deferredOps >= highWater || idle.waitBeforeWrite(System.nanoTime()) <= 0)) {
                    if (deferredOps >= highWater) {
                        forcedDrains.incrementAndGet();
                    }
                    chunk(taken);
                }
            }
            if (taken.size() == before) {
                return;
            }
            for (int i = before; i < taken.size(); i++) {
                room -= taken.get(i).slots.length;
            }
        }
    }

    private static int ops(List<Req> rs) {
        int n = 0;
        for (Req r : rs) {
            n += r.slots.length;
        }
        return n;
    }

    /** Completes finished streamed requests: counters, observer, idle estimate, then their futures. */
    private void complete(List<Active> finished, boolean deviceEmpty) {
        long t1 = System.nanoTime();
        progressAt = liveness(t1);
        Observer o = observer;
        lock.lock();
        try {
            for (Active a : finished) {
                if (a.write) {
                    idle.writeChunkTook(t1 - a.t0);
                } else if (deviceEmpty && reads.isEmpty()) {
                    idle.readEnded(t1);
                }
            }
        } finally {
            lock.unlock();
        }
        for (Active a : finished) {
            long bytes = 0;
            for (MemorySegment b : a.req.bufs) {
                bytes += b.byteSize();
            }
            if (a.write) {
                writeOps.addAndGet(a.ok.length);
                writeBytes.addAndGet(bytes);
            } else {
                readOps.addAndGet(a.ok.length);
                readBytes.addAndGet(bytes);
            }
            if (o != null) {
                o.executing(a.write, a.ok.length, a.t0, t1);
            }
            active.decrementAndGet();
            a.req.done.complete(a.ok);
        }
    }

    private void failAll(Throwable t, Active[] owner, ArrayDeque<Active> feed, ArrayDeque<Active> parked) {
        java.util.Set<Active> all = new java.util.LinkedHashSet<>(feed);
        all.addAll(parked);
        for (Active a : owner) {
            if (a != null) {
                all.add(a);
            }
        }
        feed.clear();
        parked.clear();
        for (Active a : all) {
            active.decrementAndGet();
            a.req.done.completeExceptionally(t);
        }
    }

    private void drain(ArrayDeque<Req> q, List<Req> out) {
        int ops = 0;
        while (!q.isEmpty() && (ops == 0 || ops + q.peek().slots.length <= maxBatchOps)) {
            Req r = q.poll();
            ops += r.slots.length;
            out.add(r);
        }
    }

    private void chunk(List<Req> out) {
        int ops = 0;
        while (!deferred.isEmpty() && (ops == 0 || ops + deferred.peek().slots.length <= chunkOps)) {
            Req r = deferred.poll();
            ops += r.slots.length;
            deferredOps -= r.slots.length;
            out.add(r);
        }
    }

    private void execute(boolean write, List<Req> batch) {
        int n = 0;
        for (Req r : batch) {
            n += r.slots.length;
        }
        long[] slots = new long[n];
        MemorySegment[] bufs = new MemorySegment[n];
        long bytes = 0;
        int k = 0;
        for (Req r : batch) {
            for (int i = 0; i < r.slots.length; i++) {
                slots[k] = r.slots[i];
                bufs[k++] = r.bufs[i];
                bytes += r.bufs[i].byteSize();
            }
        }
        long t0 = System.nanoTime();
        boolean[] ok;
        Throwable failure = null;
        if (active.incrementAndGet() != 1) {
            throw new IllegalStateException("two batches on device " + device.id());
        }
        try {
            ok = device.io(write, slots, bufs);
        } catch (Throwable t) {
            ok = new boolean[n];
            failure = t;
        } finally {
            active.decrementAndGet();
        }
        long t1 = System.nanoTime();
        progressAt = liveness(t1);
        Observer o = observer;
        if (o != null) {
            o.executing(write, n, t0, t1);
        }
        if (write) {
            writeOps.addAndGet(n);
            writeBytes.addAndGet(bytes);
            idle.writeChunkTook(t1 - t0); // urgent writes also tell how long a write takes here
        } else {
            readOps.addAndGet(n);
            readBytes.addAndGet(bytes);
            lock.lock();
            try {
                if (reads.isEmpty()) {
                    idle.readEnded(t1);
                }
            } finally {
                lock.unlock();
            }
        }
        k = 0;
        for (Req r : batch) {
            boolean[] mine = new boolean[r.slots.length];
            System.arraycopy(ok, k, mine, 0, mine.length);
            k += mine.length;
            if (failure != null) {
                r.done.completeExceptionally(failure);
            } else {
                r.done.complete(mine);
            }
        }
    }

    /**
     * Work this device owes now (lock held): queued reads or first-tier writes, requests on the device, deferred
     * writes past the high water. Deferred writes below it wait for an idle window by design, not for a stuck device.
     */
    private boolean due() {
        return !reads.isEmpty() || !urgent.isEmpty() || active.get() > 0 || deferredOps >= highWater;
    }

    /** The worker's state for health checks: whether it runs, and how long due work has gone without progress. */
    public record Health(boolean alive, Throwable died, long stalledNanos, int queuedReads, int queuedWrites,
                         int onDevice) {
    }

    /** The liveness clock's now, given the nanoTime just read: in production that one, not a second read. */
    private long liveness(long nanoTime) {
        return clock == Monotonic.SOURCE ? nanoTime : Monotonic.nanos(clock);
    }

    public Health health() {
        long now = Monotonic.nanos(clock);
        lock.lock();
        try {
            boolean due = due();
            long stalled = due ? Math.max(0, now - progressAt) : 0;
            return new Health(!running || (thread.isAlive() && died == null), died, stalled, reads.size(),
                    urgent.size() + deferred.size(), active.get());
        } finally {
            lock.unlock();
        }
    }

    public int pendingDeferredOps() {
        lock.lock();
        try {
            return deferredOps;
        } finally {
            lock.unlock();
        }
    }

    /** Waits until no deferred write is queued (tests, shutdown). */
    public boolean awaitDeferredDrained(long timeoutMillis) throws InterruptedException {
        long end = System.currentTimeMillis() + timeoutMillis;
        while (System.currentTimeMillis() < end) {
            if (pendingDeferredOps() == 0 && active.get() == 0) {
                return true;
            }
            Thread.sleep(2);
        }
        return false;
    }

    public IdleWindowEstimator idle() {
        return idle;
    }

    public long readOps() {
        return readOps.get();
    }

    public long writeOps() {
        return writeOps.get();
    }

    public long readBytes() {
        return readBytes.get();
    }

    public long writeBytes() {
        return writeBytes.get();
    }

    public long forcedDrains() {
        return forcedDrains.get();
    }

    @Override
    public void close() {
        lock.lock();
        try {
            running = false;
            work.signalAll();
        } finally {
            lock.unlock();
        }
        try {
            thread.join(5000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        for (ArrayDeque<Req> q : List.of(reads, urgent, deferred)) {
            for (Req r : q) {
                r.done.completeExceptionally(new IllegalStateException("device " + device.id() + " closed"));
            }
        }
    }
}
