package dev.kvpool.agent.io.gds;

import java.io.IOException;
import java.nio.file.Path;

/**
 * Blocks moved between NVMe slot files and one GPU's memory: {@link GdsIo} (cuFile, GPUDirect Storage or its
 * compat mode) or {@link BounceIo} (O_DIRECT into pinned host memory, then a copy to the GPU: the agent's path
 * without GDS); {@link AutoGpuFileIo} picks one and falls back. Every file offset, GPU offset and length is a
 * multiple of 4 KiB. Results per op: bytes moved (the length when all went), or a negative code, -errno or
 * -CUfileOpError ({@link #describe}).
 */
public interface GpuFileIo extends AutoCloseable {
    int EIO = 5, ETIMEDOUT = 110, EINVAL = 22;

    /** gds, compat (cuFile through its own POSIX path) or bounce. */
    String mode();

    GpuMemory gpu();

    /** A slot file opened for this path (registered with cuFile once, where cuFile is used). */
    interface File extends AutoCloseable {
        Path path();

        @Override
        void close();
    }

    File open(Path slotFile) throws IOException;

    /**
     * Op i moves {@code len} bytes between {@code fileOffsets[i]} of the file and {@code gpuOffsets[i]} of the GPU
     * allocation: file → GPU when {@code toGpu}, else GPU → file. Many ops per call (one batch where the
     * implementation has one).
     */
    long[] transfer(boolean toGpu, File file, long[] fileOffsets, long[] gpuOffsets, int len);

    @Override
    void close();

    /** A negative result in words: errno n (below 5000) or the CUfileOpError's name. */
    static String describe(long res) {
        if (res >= 0) {
            return res + " bytes";
        }
        return -res >= 5000 ? CuFile.errorName((int) -res) : "errno " + (-res);
    }

    /** Checks the ops against the GPU allocation and 4 KiB alignment; returns the first problem or null. */
    static String check(GpuMemory gpu, long[] fileOffsets, long[] gpuOffsets, int len) {
        if (fileOffsets.length != gpuOffsets.length) {
            return fileOffsets.length + " file offsets for " + gpuOffsets.length + " GPU offsets";
        }
        if (len <= 0 || len % 4096 != 0) {
            return "length " + len + " is not a positive multiple of 4 KiB";
        }
        for (int i = 0; i < fileOffsets.length; i++) {
            if (fileOffsets[i] < 0 || fileOffsets[i] % 4096 != 0 || gpuOffsets[i] < 0 || gpuOffsets[i] % 4096 != 0
                    || gpuOffsets[i] > gpu.bytes() - len) {
                return "op " + i + ": file offset " + fileOffsets[i] + ", GPU offset " + gpuOffsets[i]
                        + " (allocation " + gpu.bytes() + " bytes, length " + len + ")";
            }
        }
        return null;
    }
}
