package dev.kvpool.agent.pool;

import java.lang.foreign.MemorySegment;
import java.util.concurrent.locks.LockSupport;

/**
 * A device limited to a fixed bandwidth by a token bucket: used to turn one disk into several slower "devices" for
 * the pooling bench and tests (a real node has several NVMe drives; this machine has one shared virtual disk).
 * The delay is charged after the inner I/O, so the device never exceeds {@code bytesPerSecond} over any batch.
 */
public final class ThrottledDevice extends ForwardingDevice {
    private final double bytesPerNano;
    private long availableAt = System.nanoTime();

    public ThrottledDevice(Device inner, double bytesPerSecond) {
        super(inner);
        this.bytesPerNano = bytesPerSecond / 1e9;
    }

    @Override
    public boolean[] io(boolean write, long[] slots, MemorySegment[] bufs) {
        long bytes = 0;
        for (MemorySegment b : bufs) {
            bytes += b.byteSize();
        }
        long start = Math.max(System.nanoTime(), availableAt);
        boolean[] r = inner.io(write, slots, bufs);
        availableAt = start + (long) (bytes / bytesPerNano);
        long wait;
        while ((wait = availableAt - System.nanoTime()) > 0) {
            LockSupport.parkNanos(wait);
        }
        return r;
    }
}
