package dev.kvpool.agent.io.gds;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * A faked cuFile for tests outside this package (no GPU or libcufile needed): registered files are reopened through
 * /proc/self/fd, batch ops either complete at submit time (moving the bytes for real between the file and the host
 * memory standing in for GPU memory at the op's base + offset) or, while {@link #stall} is set, never complete (the
 * batch then runs into {@link GdsIo}'s deadline and is cancelled).
 */
public final class FakeCuFile implements CuFileApi {
    /** While set, submitted ops never complete. */
    public volatile boolean stall;
    private final Map<Long, FileChannel> files = new HashMap<>();
    private final List<long[]> pending = new ArrayList<>(); // {cookie, status, ret}
    private long nextHandle = 0x1000, batches;
    private int submissions, cancels;

    /** Opens through this fake: a Gds.Env whose driver (compat mode) gives GdsIo paths with this deadline. */
    public Gds.Env env(long timeoutNanos) {
        Gds.Driver d = new Gds.Driver() {
            public String version() {
                return "1150";
            }

            public boolean compat() {
                return true;
            }

            public GpuFileIo open(GpuMemory g, int maxBatch) {
                return new GdsIo(FakeCuFile.this, g, maxBatch, true, timeoutNanos, 1L << 30);
            }
        };
        return () -> d;
    }

    /** Host memory that claims to be CUDA device 0, so {@link Gds#choose} takes the cuFile path. */
    public static GpuMemory claimingDevice0(GpuMemory host) {
        return new GpuMemory() {
            public String id() {
                return host.id();
            }

            public int ordinal() {
                return 0;
            }

            public long address() {
                return host.address();
            }

            public long bytes() {
                return host.bytes();
            }

            public void bind() {
            }

            public Copier copier() {
                return host.copier();
            }

            public boolean pin(MemorySegment m) {
                return true;
            }

            public void unpin(MemorySegment m) {
            }
        };
    }

    public synchronized int submissions() {
        return submissions;
    }

    public synchronized int cancels() {
        return cancels;
    }

    public synchronized MemorySegment handleRegister(int fd) {
        try {
            FileChannel ch = FileChannel.open(Path.of("/proc/self/fd/" + fd), StandardOpenOption.READ,
                    StandardOpenOption.WRITE);
            files.put(++nextHandle, ch);
            return MemorySegment.ofAddress(nextHandle);
        } catch (IOException e) {
            throw new IllegalStateException("fake cuFileHandleRegister of fd " + fd + ": " + e, e);
        }
    }

    public synchronized void handleDeregister(MemorySegment fh) {
        FileChannel ch = files.remove(fh.address());
        if (ch != null) {
            try {
                ch.close();
            } catch (IOException e) {
                // a test fake: nothing to do
            }
        }
    }

    public void bufRegister(long devPtr, long length) {
    }

    public CuFile.Status bufDeregister(long devPtr) {
        return new CuFile.Status(0, 0);
    }

    public long io(boolean write, MemorySegment fh, long base, long size, long fileOff, long devOff, int[] errno) {
        return stall ? -GpuFileIo.ETIMEDOUT : move(fh.address(), write, base, fileOff, devOff, size);
    }

    private synchronized long move(long fh, boolean write, long base, long fileOff, long devOff, long size) {
        ByteBuffer b = MemorySegment.ofAddress(base + devOff).reinterpret(size).asByteBuffer();
        try {
            long done = 0;
            while (b.hasRemaining()) {
                int n = write ? files.get(fh).write(b, fileOff + done) : files.get(fh).read(b, fileOff + done);
                if (n <= 0) {
                    break;
                }
                done += n;
            }
            return done;
        } catch (IOException e) {
            return -5;
        }
    }

    public synchronized MemorySegment batchSetUp(int nr) {
        pending.clear();
        return MemorySegment.ofAddress(0x100000 + ++batches);
    }

    public synchronized void batchSubmit(MemorySegment batch, int nr, MemorySegment params) {
        submissions++;
        for (int i = 0; i < nr && !stall; i++) {
            long o = i * CuFile.IO_PARAMS.byteSize();
            long cookie = params.get(ValueLayout.ADDRESS, o + CuFile.P_COOKIE).address();
            boolean write = params.get(ValueLayout.JAVA_INT, o + CuFile.P_OPCODE) == CuFile.OP_WRITE;
            long r = move(params.get(ValueLayout.ADDRESS, o + CuFile.P_FH).address(), write,
                    params.get(ValueLayout.ADDRESS, o + CuFile.P_BASE).address(),
                    params.get(ValueLayout.JAVA_LONG, o + CuFile.P_FILE_OFF),
                    params.get(ValueLayout.JAVA_LONG, o + CuFile.P_DEV_OFF),
                    params.get(ValueLayout.JAVA_LONG, o + CuFile.P_SIZE));
            pending.add(new long[] {cookie, CuFile.STATUS_COMPLETE, r});
        }
    }

    public synchronized int batchStatus(MemorySegment batch, int minNr, int maxNr, MemorySegment events,
            long timeoutNanos) {
        int n = Math.min(maxNr, pending.size());
        for (int e = 0; e < n; e++) {
            long[] ev = pending.removeFirst();
            long o = e * CuFile.IO_EVENTS.byteSize();
            events.set(ValueLayout.ADDRESS, o + CuFile.E_COOKIE, MemorySegment.ofAddress(ev[0]));
            events.set(ValueLayout.JAVA_INT, o + CuFile.E_STATUS, (int) ev[1]);
            events.set(ValueLayout.JAVA_LONG, o + CuFile.E_RET, ev[2]);
        }
        return n;
    }

    public synchronized CuFile.Status batchCancel(MemorySegment batch) {
        cancels++;
        pending.clear();
        return new CuFile.Status(0, 0);
    }

    public synchronized void batchDestroy(MemorySegment batch) {
    }
}
