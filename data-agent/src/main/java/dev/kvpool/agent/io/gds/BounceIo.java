package dev.kvpool.agent.io.gds;

import dev.kvpool.agent.io.BlockFile;
import dev.kvpool.agent.io.BlockIo;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * {@link GpuFileIo} without GPUDirect Storage, the way the agent moves bytes anyway: O_DIRECT reads and writes
 * through a {@link BlockIo} of its own (io_uring where it works) into a pinned host staging buffer, and copies
 * between it and the GPU on a stream of its own. The staging buffer is two halves, so the disk fills one while the
 * copy engine drains the other.
 */
public final class BounceIo implements GpuFileIo {
    private final GpuMemory gpu;
    private final BlockIo io;
    private final Arena arena = Arena.ofShared();
    private final MemorySegment staging;
    private final boolean pinned;
    private final GpuMemory.Copier copier;
    private boolean closed;

    /**
     * @param io           used by this instance only (its own ring: the NVMe device workers keep theirs)
     * @param stagingBytes both halves together; each half holds at least one op
     */
    public BounceIo(GpuMemory gpu, BlockIo io, long stagingBytes) {
        this.gpu = gpu;
        this.io = io;
        this.staging = arena.allocate(Math.max(2 * 4096, stagingBytes & ~8191L), 4096);
        this.pinned = gpu.pin(staging);
        this.copier = gpu.copier();
        io.registerBuffers(List.of(staging));
    }

    @Override
    public String mode() {
        return "bounce";
    }

    @Override
    public GpuMemory gpu() {
        return gpu;
    }

    /** Whether the staging buffer is page-locked (copies DMA'd directly). */
    public boolean pinned() {
        return pinned;
    }

    public String ioEngine() {
        return io.name();
    }

    record Plain(Path path, BlockFile file) implements File {
        @Override
        public void close() {
            file.close();
        }
    }

    @Override
    public File open(Path slotFile) throws IOException {
        return new Plain(slotFile, io.open(slotFile, 0));
    }

    @Override
    public synchronized long[] transfer(boolean toGpu, File file, long[] fileOffsets, long[] gpuOffsets, int len) {
        String bad = GpuFileIo.check(gpu, fileOffsets, gpuOffsets, len);
        if (bad != null) {
            throw new IllegalArgumentException(bad);
        }
        long[] res = new long[fileOffsets.length];
        if (closed) {
            Arrays.fill(res, -EIO);
            return res;
        }
        long half = staging.byteSize() / 2;
        int per = (int) Math.max(1, half / len);
        if (len > half) {
            throw new IllegalArgumentException("length " + len + " exceeds the staging half of " + half + " bytes");
        }
        BlockFile f = ((Plain) file).file();
        gpu.bind();
        int groups = (res.length + per - 1) / per;
        try {
            if (toGpu) {
                // read group g into half g%2 while group g-1's copy runs; sync before a half is read into again
                for (int g = 0; g < groups; g++) {
                    MemorySegment h = staging.asSlice((g & 1) * half, half);
                    int from = g * per, n = Math.min(per, res.length - from);
                    diskIo(false, f, h, fileOffsets, from, n, len, res);
                    copier.sync(); // group g-1's copy out of the other half is done
                    for (int j = 0; j < n; j++) {
                        if (res[from + j] == len) {
                            copier.toGpu(gpuOffsets[from + j], h.asSlice((long) j * len, len));
                        }
                    }
                }
                copier.sync();
            } else {
                // copy group g into half g%2, then write group g-1 from the other half while it runs
                for (int g = 0; g <= groups; g++) {
                    if (g < groups) {
                        MemorySegment h = staging.asSlice((g & 1) * half, half);
                        int from = g * per, n = Math.min(per, res.length - from);
                        for (int j = 0; j < n; j++) {
                            copier.toHost(gpuOffsets[from + j], h.asSlice((long) j * len, len));
                        }
                    }
                    if (g > 0) {
                        int p = g - 1;
                        MemorySegment h = staging.asSlice((p & 1) * half, half);
                        int from = p * per, n = Math.min(per, res.length - from);
                        diskIo(true, f, h, fileOffsets, from, n, len, res);
                    }
                    copier.sync(); // group g is in its half
                }
            }
        } catch (RuntimeException e) { // a failed copy: the whole call is in doubt, every op failed
            Arrays.fill(res, -EIO);
        }
        return res;
    }

    private void diskIo(boolean write, BlockFile f, MemorySegment half, long[] fileOffsets, int from, int n, int len,
                        long[] res) {
        List<BlockIo.Op> ops = new ArrayList<>(n);
        for (int j = 0; j < n; j++) {
            ops.add(new BlockIo.Op(write, fileOffsets[from + j], half.asSlice((long) j * len, len)));
        }
        int[] r = io.execute(f, ops);
        for (int j = 0; j < n; j++) {
            res[from + j] = r[j];
        }
    }

    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        copier.close();
        io.close();
        if (pinned) {
            gpu.unpin(staging);
        }
        arena.close();
    }
}
