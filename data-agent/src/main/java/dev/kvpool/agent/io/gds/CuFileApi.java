package dev.kvpool.agent.io.gds;

import java.lang.foreign.MemorySegment;

/**
 * The cuFile calls {@link GdsIo} makes, as {@link CuFile} binds them; an interface so the tests can fake a cuFile
 * that misbehaves (a batch whose completions never come) where no GPU or libcufile exists.
 */
interface CuFileApi {
    MemorySegment handleRegister(int fd);

    void handleDeregister(MemorySegment fh);

    void bufRegister(long devPtr, long length);

    CuFile.Status bufDeregister(long devPtr);

    long io(boolean write, MemorySegment fh, long devBase, long size, long fileOffset, long devOffset, int[] errno);

    MemorySegment batchSetUp(int nr);

    void batchSubmit(MemorySegment batch, int nr, MemorySegment params);

    int batchStatus(MemorySegment batch, int minNr, int maxNr, MemorySegment events, long timeoutNanos);

    CuFile.Status batchCancel(MemorySegment batch);

    void batchDestroy(MemorySegment batch);
}
