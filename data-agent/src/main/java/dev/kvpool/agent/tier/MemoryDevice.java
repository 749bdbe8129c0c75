package dev.kvpool.agent.tier;

import dev.kvpool.agent.io.BlockIo;
import dev.kvpool.agent.pool.Device;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * A host memory region: off-heap, 4 KiB-aligned, cut into fixed-size slots. A slot's layer i is at slot + i * L
 * in every layout (see {@link dev.kvpool.agent.pool.Layout}).
 */
public final class MemoryDevice implements Device {
    private final String id;
    private final Arena arena = Arena.ofShared();
    private final MemorySegment region;
    private final int slotBytes;
    private final long slots;

    public MemoryDevice(String id, long slots, int slotBytes) {
        if (slotBytes % BlockIo.ALIGN != 0) {
            throw new IllegalArgumentException("slot size must be a multiple of 4 KiB: " + slotBytes);
        }
        this.id = id;
        this.slots = slots;
        this.slotBytes = slotBytes;
        this.region = arena.allocate(slots * slotBytes, BlockIo.ALIGN);
    }

    public MemorySegment region() {
        return region;
    }

    @Override
    public String id() {
        return id;
    }

    @Override
    public long slotCount() {
        return slots;
    }

    @Override
    public int slotBytes() {
        return slotBytes;
    }

    @Override
    public MemorySegment slotMemory(long slot) {
        return region.asSlice(slot * slotBytes, slotBytes);
    }

    @Override
    public boolean[] io(boolean write, long[] slotNos, MemorySegment[] bufs) {
        boolean[] ok = new boolean[slotNos.length];
        for (int i = 0; i < slotNos.length; i++) {
            long len = bufs[i].byteSize();
            int layer = Device.layerOf(slotNos[i]); // a block stays in one piece here: layer i is at i * len
            long within = layer < 0 ? 0 : layer * len;
            if (within + len > slotBytes) {
                continue;
            }
            MemorySegment slot = region.asSlice(Device.slotOf(slotNos[i]) * slotBytes + within, len);
            if (write) {
                slot.copyFrom(bufs[i]);
            } else {
                bufs[i].copyFrom(slot);
            }
            ok[i] = true;
        }
        return ok;
    }

    @Override
    public void close() {
        GpuDevice.unpin(region); // the GPU tier may have page-locked it; unregister before the memory goes
        arena.close();
    }
}
