package dev.kvpool.agent.io.gds;

import java.lang.foreign.MemorySegment;

/**
 * The GPU memory a {@link GpuFileIo} moves blocks to and from: one device allocation (the GPU tier's slots), by
 * offset. {@link dev.kvpool.agent.tier.GpuDevice} is the CUDA one; {@link #ofHost} stands in for it where there is
 * no GPU (the agent's host-memory GPU tier, and the tests), so the same NVMe → G1 path runs everywhere.
 */
public interface GpuMemory {
    String id();

    /** CUDA device ordinal; -1 for a host-memory stand-in. */
    int ordinal();

    /** Device address of the allocation (what cuFileBufRegister registers). */
    long address();

    long bytes();

    /** Makes this device's context current on the calling thread (cuFile and the copies need it). */
    void bind();

    /** A copier on a stream of its own (so it never waits behind, or for, the tier's own copies). */
    Copier copier();

    /** Page-locks host memory for direct DMA; false where refused (copies still work, slower). */
    boolean pin(MemorySegment host);

    void unpin(MemorySegment host);

    /** Host ↔ device copies issued in order on one stream; {@link #sync} waits for all issued so far. */
    interface Copier extends AutoCloseable {
        void toGpu(long gpuOffset, MemorySegment src);

        void toHost(long gpuOffset, MemorySegment dst);

        void sync();

        @Override
        void close();
    }

    /** Host memory standing in for a GPU allocation: copies are plain memory copies. */
    static GpuMemory ofHost(String id, MemorySegment region) {
        return new GpuMemory() {
            @Override
            public String id() {
                return id;
            }

            @Override
            public int ordinal() {
                return -1;
            }

            @Override
            public long address() {
                return region.address();
            }

            @Override
            public long bytes() {
                return region.byteSize();
            }

            @Override
            public void bind() {
            }

            @Override
            public Copier copier() {
                return new Copier() {
                    @Override
                    public void toGpu(long off, MemorySegment src) {
                        MemorySegment.copy(src, 0, region, off, src.byteSize());
                    }

                    @Override
                    public void toHost(long off, MemorySegment dst) {
                        MemorySegment.copy(region, off, dst, 0, dst.byteSize());
                    }

                    @Override
                    public void sync() {
                    }

                    @Override
                    public void close() {
                    }
                };
            }

            @Override
            public boolean pin(MemorySegment host) {
                return true;
            }

            @Override
            public void unpin(MemorySegment host) {
            }
        };
    }
}
