package dev.kvpool.agent.store;

import dev.kvpool.agent.io.BlockIo;
import dev.kvpool.agent.io.gds.AutoGpuFileIo;
import dev.kvpool.agent.io.gds.BounceIo;
import dev.kvpool.agent.io.gds.Gds;
import dev.kvpool.agent.io.gds.GpuFileIo;
import dev.kvpool.agent.io.gds.GpuMemory;
import dev.kvpool.agent.pool.Device;
import dev.kvpool.agent.pool.PooledTier;
import dev.kvpool.agent.tier.FileDevice;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;
import java.util.logging.Logger;

/**
 * NVMe hits of a load promoted into the GPU tier (G1) straight from the NVMe slot files, through one
 * {@link GpuFileIo} per GPU: cuFile (GPUDirect Storage, or its compat mode) where it works, the bounce path
 * otherwise ({@link Gds}). The NVMe slots are pinned for the move (not evicted or reused meanwhile), the GPU slots
 * are filled before the blocks enter the GPU tier's index, with the CRC32C the NVMe index holds for them: with GDS
 * the CPU never sees these bytes, so they are trusted on the strength of that CRC (checked when they were written
 * from host memory) and the read's full length; the GPU tier checks its CRC again when it serves them.
 *
 * <p>Promotions run on one thread of their own, after the load has answered; at most {@link #MAX_QUEUED} wait, more
 * are skipped (the blocks stay on NVMe and in the host pool: a later load promotes them).
 */
public final class GpuPromoter implements AutoCloseable {
    private static final Logger LOG = Logger.getLogger(GpuPromoter.class.getName());
    static final int MAX_QUEUED = 4;

    private final PooledTier gpu;
    private final PooledTier nvme;
    private final int blockBytes;
    private final List<AutoGpuFileIo> ios;
    /** Per GPU device, per NVMe device: the slot file opened through that GPU's path; null where not possible. */
    private final GpuFileIo.File[][] files;
    private final ExecutorService exec = Executors.newSingleThreadExecutor(r -> {
        Thread t = new Thread(r, "kvpool-gpu-promote");
        t.setDaemon(true);
        return t;
    });
    private final AtomicInteger queued = new AtomicInteger();
    private final AtomicLong promoted = new AtomicLong(), failed = new AtomicLong(), skipped = new AtomicLong();

    /** Picks one GPU's path given the bounce path's factory; tests put a faked cuFile behind it. */
    @FunctionalInterface
    interface PathChooser {
        AutoGpuFileIo choose(GpuMemory gpu, Supplier<GpuFileIo> bounce);
    }

    /**
     * @param memories  the GPU tier's devices as GPU memory, in the tier's device order
     * @param blockIo   makes the bounce path's own BlockIo (its own ring; the NVMe workers keep theirs)
     * @param chooser   null: {@link Gds#choose} with the process's cuFile, as {@code gds} says (tests only set it)
     */
    GpuPromoter(PooledTier gpu, List<GpuMemory> memories, PooledTier nvme, GdsSettings gds, Supplier<BlockIo> blockIo,
            PathChooser chooser) {
        this.gpu = gpu;
        this.nvme = nvme;
        this.blockBytes = gpu.blockBytes();
        this.ios = new ArrayList<>();
        this.files = new GpuFileIo.File[memories.size()][nvme.devices().size()];
        try {
            for (int g = 0; g < memories.size(); g++) {
                GpuMemory m = memories.get(g);
                Supplier<GpuFileIo> bounce = () -> new BounceIo(m, blockIo.get(), gds.stagingBytes());
                AutoGpuFileIo io = chooser != null ? chooser.choose(m, bounce)
                        : Gds.choose(gds.mode(), m, Gds.system(gds.library()), bounce, gds.maxBatch());
                ios.add(io);
                for (int d = 0; d < nvme.devices().size(); d++) {
                    Device dev = nvme.devices().get(d);
                    if (!(dev instanceof FileDevice fd)) { // throttled (a test set-up): its worker's pace is the point
                        continue;
                    }
                    try {
                        files[g][d] = io.open(fd.path());
                    } catch (IOException e) {
                        if (gds.mode() == Gds.Mode.ON) {
                            throw new IllegalStateException(Gds.MODE_PROPERTY + "=on: " + e.getMessage(), e);
                        }
                        LOG.warning("NVMe → GPU promotion from " + fd.path() + " off: " + e.getMessage());
                    }
                }
            }
        } catch (RuntimeException e) {
            close();
            throw e;
        }
    }

    /** The per-GPU paths (mode, reason, counters) for status and metrics. */
    public List<AutoGpuFileIo> paths() {
        return List.copyOf(ios);
    }

    public long promoted() {
        return promoted.get();
    }

    public long failed() {
        return failed.get();
    }

    public long skipped() {
        return skipped.get();
    }

    /** What a promotion stored: the keys now in the GPU tier and the block before each. */
    record Promotion(long[] keys, Long[] parents) {
        static final Promotion NONE = new Promotion(new long[0], new Long[0]);
    }

    /** Starts promoting these NVMe-held keys into the GPU tier; keys already there or no longer on NVMe are left. */
    CompletableFuture<Promotion> promote(long[] keys) {
        List<Long> want = new ArrayList<>();
        for (long k : keys) {
            if (!gpu.contains(k)) {
                want.add(k);
            }
        }
        if (want.isEmpty()) {
            return CompletableFuture.completedFuture(Promotion.NONE);
        }
        if (queued.incrementAndGet() > MAX_QUEUED) {
            queued.decrementAndGet();
            skipped.addAndGet(want.size());
            return CompletableFuture.completedFuture(Promotion.NONE);
        }
        long[] k0 = want.stream().mapToLong(Long::longValue).toArray();
        Object[] handles = new Object[k0.length];
        PooledTier.Located[] loc0 = nvme.pinLocated(k0, handles);
        Long[] par0 = nvme.parents(k0);
        List<Integer> have = new ArrayList<>();
        for (int i = 0; i < k0.length; i++) {
            if (loc0[i] != null && reachable(loc0[i].device())) {
                have.add(i);
            }
        }
        long[] k = new long[have.size()];
        int[] crcs = new int[k.length];
        Long[] par = new Long[k.length];
        PooledTier.Located[] loc = new PooledTier.Located[k.length];
        for (int j = 0; j < k.length; j++) {
            int i = have.get(j);
            k[j] = k0[i];
            crcs[j] = loc0[i].crc();
            par[j] = par0[i];
            loc[j] = loc0[i];
        }
        CompletableFuture<boolean[]> f = k.length == 0 ? CompletableFuture.completedFuture(new boolean[0])
                : gpu.putVia(k, crcs, par, (gd, slots, which) -> CompletableFuture.supplyAsync(
                        () -> fill(gd, slots, which, loc), exec));
        return f.handle((ok, err) -> {
            nvme.release(handles);
            queued.decrementAndGet();
            if (err != null) {
                failed.addAndGet(k.length);
                LOG.fine("NVMe → GPU promotion of " + k.length + " blocks failed: " + err);
                return Promotion.NONE;
            }
            List<Integer> stored = new ArrayList<>();
            for (int j = 0; j < k.length; j++) {
                if (ok[j]) {
                    stored.add(j);
                }
            }
            promoted.addAndGet(stored.size());
            failed.addAndGet(k.length - stored.size());
            return new Promotion(stored.stream().mapToLong(j -> k[j]).toArray(),
                    stored.stream().map(j -> par[j]).toArray(Long[]::new));
        });
    }

    private boolean reachable(int nvmeDevice) {
        for (GpuFileIo.File[] perGpu : files) {
            if (perGpu[nvmeDevice] == null) {
                return false;
            }
        }
        return true;
    }

    /** One GPU device's share: grouped by NVMe device, one transfer (one batch) per NVMe slot file. */
    private boolean[] fill(int gd, long[] slots, int[] which, PooledTier.Located[] loc) {
        boolean[] ok = new boolean[slots.length];
        long gpuSlot = gpu.devices().get(gd).slotBytes();
        for (int nd = 0; nd < files[gd].length; nd++) {
            List<Integer> mine = new ArrayList<>();
            for (int j = 0; j < which.length; j++) {
                if (loc[which[j]].device() == nd) {
                    mine.add(j);
                }
            }
            if (mine.isEmpty()) {
                continue;
            }
            long nvmeSlot = nvme.devices().get(nd).slotBytes();
            long[] fo = new long[mine.size()], go = new long[mine.size()];
            for (int m = 0; m < fo.length; m++) {
                int j = mine.get(m);
                fo[m] = loc[which[j]].slot() * nvmeSlot;
                go[m] = slots[j] * gpuSlot;
            }
            long[] res = ios.get(gd).transfer(true, files[gd][nd], fo, go, blockBytes);
            for (int m = 0; m < fo.length; m++) {
                ok[mine.get(m)] = res[m] == blockBytes;
                if (res[m] == -dev.kvpool.agent.io.gds.GpuFileIo.ETIMEDOUT && !gpu.verifiesLoads()) {
                    // a cancelled cuFile read may still land later, in a GPU slot that holds another block by then:
                    // from now on every GPU-tier load is checked, so such bytes are a miss, never served
                    gpu.verifyLoads(true);
                    LOG.warning("a cuFile read into the GPU tier did not complete within its deadline and may still"
                            + " land later: every GPU-tier load is checked from now on (as with kvpool.agent.gpu.verify)");
                }
            }
        }
        return ok;
    }

    @Override
    public void close() {
        exec.shutdown();
        try {
            exec.awaitTermination(30, java.util.concurrent.TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        for (GpuFileIo.File[] perGpu : files) {
            for (GpuFileIo.File f : perGpu) {
                if (f != null) {
                    f.close();
                }
            }
            Arrays.fill(perGpu, null);
        }
        ios.forEach(AutoGpuFileIo::close);
    }
}
