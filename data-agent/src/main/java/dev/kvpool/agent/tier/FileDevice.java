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
 * the agent process. In the layered layout ({@link dev.kvpool.agent.pool.Layout}) the file is cut into one region
 * per layer, and the slot table keeps a CRC32C per layer beside each record.
 */
public final class FileDevice implements Device {
    private final String id;
    private final BlockIo io;
    private final BlockFile file;
    private final int slotBytes;
    private final long slots;
    private final SlotTable table;
    private final int layers;
    private final int layerBytes;
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
        this(id, dir, slots, slotBytes, io, identity, 1);
    }

    /**
     * @param layers 1: a slot is one piece of the file (contiguous); more: the file is cut into {@code layers}
     *               regions of {@code slots} layers each, layer i of slot s at region i, place s (layered), so a
     *               read of layer i of neighbouring slots is one run of the disk
     */
    public FileDevice(String id, Path dir, long slots, int slotBytes, BlockIo io, String identity, int layers) {
        if (layers < 1 || slotBytes % layers != 0 || (slotBytes / layers) % BlockIo.ALIGN != 0) {
            throw new IllegalArgumentException("layers of " + slotBytes + "-byte slots must be multiples of 4 KiB: "
                    + layers + " layers");
        }
        this.layers = layers;
        this.layerBytes = slotBytes / layers;
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
                    identity, java.nio.file.Files.exists(dir.resolve("kvpool-slots.dat")), layers);
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
    public boolean layerMajor() {
        return layers > 1;
    }

    /** Where an op's bytes start in the file: a whole slot, or one layer of it (see {@link Device#layerAddress}). */
    long offset(long address, long len) {
        long slot = Device.slotOf(address);
        int layer = Device.layerOf(address);
        // layered: one layer of a run of neighbouring slots (len a multiple of the layer) is one stretch of the file
        boolean bad = slot >= slots || layer >= 0 && (layers > 1
                ? layer >= layers || len % layerBytes != 0 || len == 0 || slot + len / layerBytes > slots
                : (layer + 1) * len > slotBytes);
        if (bad) {
            throw new IllegalArgumentException("no such place on device " + id + ": slot " + slot + " layer " + layer);
        }
        if (layer < 0) {
            return slot * slotBytes;
        }
        return layers > 1 ? ((long) layer * slots + slot) * layerBytes : slot * slotBytes + layer * len;
    }

    @Override
    public boolean[] io(boolean write, long[] slotNos, MemorySegment[] bufs) {
        List<BlockIo.Op> ops = new ArrayList<>(slotNos.length);
        int[] opsOf = new int[slotNos.length];
        for (int i = 0; i < slotNos.length; i++) {
            if (layers > 1 && Device.layerOf(slotNos[i]) < 0) { // a whole slot of the layered layout: every layer
                for (int l = 0; l < layers; l++) {
                    ops.add(new BlockIo.Op(write, offset(Device.layerAddress(slotNos[i], l), layerBytes),
                            bufs[i].asSlice((long) l * layerBytes, layerBytes)));
                }
                opsOf[i] = layers;
            } else {
                ops.add(new BlockIo.Op(write, offset(slotNos[i], bufs[i].byteSize()), bufs[i]));
                opsOf[i] = 1;
            }
        }
        int[] res = io.execute(file, ops);
        boolean[] ok = new boolean[slotNos.length];
        for (int i = 0, k = 0; i < slotNos.length; i++) {
            boolean all = true;
            for (int j = 0; j < opsOf[i]; j++, k++) {
                all &= res[k] == ops.get(k).buf().byteSize();
            }
            ok[i] = all;
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
                    if (layers > 1 && Device.layerOf(slot) < 0) { // the tier sends one op per layer here
                        throw new IllegalArgumentException("device " + id + " is layered: a pipeline op is one layer");
                    }
                    return p.offer(new BlockIo.Op(write, offset(slot, buf.byteSize()), buf), tag);
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
