package dev.kvpool.agent.io;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.List;

/**
 * Block I/O against large preallocated files with O_DIRECT: every offset, length and buffer address is a multiple of
 * 4 KiB. Implementations: {@link dev.kvpool.agent.io.uring.IoUringBlockIo} (FFM io_uring, batched, fixed buffers)
 * and {@link FileChannelBlockIo} (the fallback and the test oracle).
 */
public interface BlockIo extends AutoCloseable {
    int ALIGN = 4096;

    /** One read or write of {@code buf.byteSize()} bytes at {@code offset}. */
    record Op(boolean write, long offset, MemorySegment buf) {
        public static Op read(long offset, MemorySegment buf) {
            return new Op(false, offset, buf);
        }

        public static Op write(long offset, MemorySegment buf) {
            return new Op(true, offset, buf);
        }
    }

    String name();

    /** Opens (creating) a file for O_DIRECT I/O and preallocates it to at least {@code size} bytes. */
    BlockFile open(Path path, long size) throws IOException;

    /**
     * Runs a batch with up to the queue depth in flight and waits for all of it.
     *
     * @return per op the bytes transferred, or -errno
     */
    int[] execute(BlockFile file, List<Op> ops);

    /**
     * Ops handed over one at a time and completed in any order, keeping up to the queue depth in flight across
     * batches (as fio does) instead of draining to zero at the end of each {@link #execute} call. One owner thread.
     */
    interface Pipeline {
        /** Completion of one op: the tag given to {@link #offer} and the bytes transferred, or -errno. */
        interface Completion {
            void complete(long tag, int res);
        }

        /** Most ops in flight at once. */
        int depth();

        /** Ops offered and not yet completed. */
        int inFlight();

        /** Queues one op (not yet handed to the kernel); false when {@link #depth} ops are already in flight. */
        boolean offer(Op op, long tag);

        /**
         * Hands the queued ops to the kernel and delivers the completions that are ready; when {@code wait} and
         * some op is in flight, first waits for at least one.
         *
         * @return completions delivered
         */
        int poll(boolean wait, Completion c);
    }

    /** A pipeline on {@code file}, or null where this implementation only runs whole batches. */
    default Pipeline pipeline(BlockFile file) {
        return null;
    }

    /** Buffers the implementation may pin for zero-setup I/O (io_uring fixed buffers); a hint, optional. */
    default void registerBuffers(List<MemorySegment> buffers) {
    }

    @Override
    void close();

    static void checkAligned(Op op) {
        if (op.offset() % ALIGN != 0 || op.buf().byteSize() % ALIGN != 0 || op.buf().address() % ALIGN != 0
                || op.buf().byteSize() == 0) {
            throw new IllegalArgumentException("O_DIRECT needs 4 KiB alignment: offset " + op.offset() + ", length "
                    + op.buf().byteSize() + ", address 0x" + Long.toHexString(op.buf().address()));
        }
    }
}
