package dev.kvpool.agent.tier;

import dev.kvpool.agent.io.gds.GpuMemory;
import java.lang.foreign.MemorySegment;
import jcuda.Pointer;
import jcuda.runtime.JCuda;
import jcuda.runtime.cudaMemcpyKind;
import jcuda.runtime.cudaStream_t;

/** A {@link GpuDevice}'s allocation as {@link GpuMemory}: its raw device address, copies on a stream of their own. */
final class CudaMemory implements GpuMemory {
    private final String id;
    private final int ordinal;
    private final long address;
    private final long bytes;

    CudaMemory(String id, int ordinal, Pointer base, long bytes) {
        this.id = id;
        this.ordinal = ordinal;
        this.address = Raw.address(base);
        this.bytes = bytes;
    }

    /** JCuda hides a pointer's address from callers; a subclass may read it, and make a pointer of one. */
    static final class Raw extends Pointer {
        private Raw(Pointer p) {
            super(p);
        }

        private Raw(long address) {
            super(address);
        }

        static long address(Pointer p) {
            Raw r = new Raw(p);
            return r.getNativePointer() + r.getByteOffset();
        }

        static Pointer at(long address) {
            return new Raw(address);
        }
    }

    @Override
    public String id() {
        return id;
    }

    @Override
    public int ordinal() {
        return ordinal;
    }

    @Override
    public long address() {
        return address;
    }

    @Override
    public long bytes() {
        return bytes;
    }

    @Override
    public void bind() {
        JCuda.setExceptionsEnabled(true);
        JCuda.cudaSetDevice(ordinal);
        JCuda.cudaFree(new Pointer()); // the primary context is created and current on this thread (cuFile needs it)
    }

    @Override
    public boolean pin(MemorySegment host) {
        bind();
        return GpuDevice.pin(host);
    }

    @Override
    public void unpin(MemorySegment host) {
        GpuDevice.unpin(host);
    }

    @Override
    public Copier copier() {
        bind();
        cudaStream_t stream = new cudaStream_t();
        JCuda.cudaStreamCreateWithFlags(stream, JCuda.cudaStreamNonBlocking);
        return new Copier() {
            @Override
            public void toGpu(long gpuOffset, MemorySegment src) {
                check(gpuOffset, src.byteSize());
                JCuda.cudaMemcpyAsync(Raw.at(address + gpuOffset), Pointer.to(src.asByteBuffer()), src.byteSize(),
                        cudaMemcpyKind.cudaMemcpyHostToDevice, stream);
            }

            @Override
            public void toHost(long gpuOffset, MemorySegment dst) {
                check(gpuOffset, dst.byteSize());
                JCuda.cudaMemcpyAsync(Pointer.to(dst.asByteBuffer()), Raw.at(address + gpuOffset), dst.byteSize(),
                        cudaMemcpyKind.cudaMemcpyDeviceToHost, stream);
            }

            @Override
            public void sync() {
                JCuda.setExceptionsEnabled(true);
                JCuda.cudaStreamSynchronize(stream);
            }

            @Override
            public void close() {
                JCuda.cudaStreamSynchronize(stream);
                JCuda.cudaStreamDestroy(stream);
            }
        };
    }

    private void check(long off, long len) {
        if (off < 0 || len < 0 || off > bytes - len) {
            throw new IllegalArgumentException("GPU range [" + off + ", +" + len + ") outside " + bytes + " bytes");
        }
    }
}
