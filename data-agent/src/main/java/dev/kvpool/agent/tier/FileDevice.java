package dev.kvpool.agent.tier;

import dev.kvpool.agent.io.BlockFile;
import dev.kvpool.agent.io.BlockIo;
import dev.kvpool.agent.pool.Device;
import dev.kvpool.agent.pool.SlotTable;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * One NVMe "device": a single large preallocated file (in a directory on that disk) managed as slot ranges, read
 * and written with O_DIRECT through its own {@link BlockIo} (its own io_uring). No file per block. With an identity,
 * a {@link SlotTable} beside the file ({@code kvpool-slots.idx}) records what each slot holds, so the blocks outlive
 * the agent process.
 */
public final class FileDevice implements Device {
    private final String id;
    private final BlockIo io;
    private final BlockFile file;
    private final int slotBytes;
    private final long slots;
    private final SlotTable table;
    private Pipeline pipeline;

    /** A device whose blocks last as long as the process (no slot table). */
    public FileDevice(String id, Path dir, long slots, int slotBytes, BlockIo io) {
        this(id, dir, slots, slotBytes, io, null);
    }

    /**
     * @param identity what the keys stored here mean (instance, spec, model, block geometry): with it, the blocks
     *                 recorded under the same identity are kept across restarts; null keeps nothing
     */
    public FileDevice(String id, Path dir, long slots, int slotBytes, BlockIo io, String identity) {
        if (slotBytes % BlockIo.ALIGN != 0) {
            throw new IllegalArgumentException("slot size must be a multiple of 4 KiB: " + slotBytes);
        }
        this.id = id;
        this.io = io;
        this.slots = slots;
        this.slotBytes = slotBytes;
        try {
            // the table first: its lock keeps a second agent off this directory before any byte is touched
            this.table = identity == null ? null : SlotTable.open(dir.resolve("kvpool-slots.idx"), slots, slotBytes,
                    identity, java.nio.file.Files.exists(dir.resolve("kvpool-slots.dat")));
        } catch (IOException e) {
            throw new UncheckedIOException("cannot open the slot table of device " + id + " in " + dir + ": "
                    + e.getMessage(), e);
        }
        try {
            this.file = io.open(dir.resolve("kvpool-slots.dat"), slots * slotBytes);
        } catch (IOException e) {
            if (table != null) {
                table.close();
            }
            throw new UncheckedIOException("cannot open the slot file of device " + id + " in " + dir, e);
        }
    }

    @Override
    public SlotTable slotTable() {
        return table;
    }

    public BlockIo blockIo() {
        return io;
    }

    public Path path() {
        return file.path();
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
    public boolean[] io(boolean write, long[] slotNos, MemorySegment[] bufs) {
        List<BlockIo.Op> ops = new ArrayList<>(slotNos.length);
        for (int i = 0; i < slotNos.length; i++) {
            ops.add(new BlockIo.Op(write, slotNos[i] * slotBytes, bufs[i]));
        }
        int[] res = io.execute(file, ops);
        boolean[] ok = new boolean[res.length];
        for (int i = 0; i < res.length; i++) {
            ok[i] = res[i] == bufs[i].byteSize();
        }
        return ok;
    }

    @Override
    public synchronized Pipeline pipeline() {
        if (pipeline == null) {
            BlockIo.Pipeline p = io.pipeline(file);
            if (p == null) {
                return null;
            }
            pipeline = new Pipeline() {
                @Override
                public int depth() {
                    return p.depth();
                }

                @Override
                public int inFlight() {
                    return p.inFlight();
                }

                @Override
                public boolean offer(boolean write, long slot, MemorySegment buf, long tag) {
                    return p.offer(new BlockIo.Op(write, slot * slotBytes, buf), tag);
                }

                @Override
                public int poll(boolean wait, Completion c) {
                    return p.poll(wait, c::complete);
                }
            };
        }
        return pipeline;
    }

    @Override
    public void close() {
        file.close();
        io.close();
        if (table != null) {
            table.close();
        }
    }
}
