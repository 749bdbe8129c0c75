package dev.kvpool.agent.io;

import com.sun.nio.file.ExtendedOpenOption;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

/**
 * {@link FileChannel} with {@link ExtendedOpenOption#DIRECT}: no native code. With queue depth 1 it is the
 * sequential oracle of the tests; with a larger depth it keeps that many positional reads/writes in flight on
 * platform threads, which is the fallback when io_uring is unavailable.
 */
public final class FileChannelBlockIo implements BlockIo {
    private final int queueDepth;
    private final ExecutorService pool;

    public FileChannelBlockIo(int queueDepth) {
        this.queueDepth = Math.max(1, queueDepth);
        this.pool = this.queueDepth > 1 ? Executors.newFixedThreadPool(this.queueDepth, r -> {
            Thread t = new Thread(r, "kvpool-fc-io");
            t.setDaemon(true);
            return t;
        }) : null;
    }

    @Override
    public String name() {
        return "filechannel-direct(qd=" + queueDepth + ")";
    }

    @Override
    public BlockFile open(Path path, long size) throws IOException {
        Files.createDirectories(path.toAbsolutePath().getParent());
        preallocate(path, size);
        FileChannel ch = FileChannel.open(path, StandardOpenOption.READ, StandardOpenOption.WRITE,
                StandardOpenOption.CREATE, ExtendedOpenOption.DIRECT);
        return new BlockFile(path, -1, ch, Math.max(size, ch.size()), () -> BlockFile.closeQuietly(ch));
    }

    static void preallocate(Path path, long size) throws IOException {
        try (RandomAccessFile f = new RandomAccessFile(path.toFile(), "rw")) {
            if (f.length() < size) {
                f.setLength(size);
            }
        }
    }

    @Override
    public int[] execute(BlockFile file, List<Op> ops) {
        int[] res = new int[ops.size()];
        for (Op op : ops) {
            BlockIo.checkAligned(op);
        }
        if (pool == null || ops.size() == 1) {
            for (int i = 0; i < ops.size(); i++) {
                res[i] = one(file.channel(), ops.get(i));
            }
            return res;
        }
        List<Future<Integer>> fs = new ArrayList<>(ops.size());
        for (Op op : ops) {
            fs.add(pool.submit(() -> one(file.channel(), op)));
        }
        for (int i = 0; i < fs.size(); i++) {
            try {
                res[i] = fs.get(i).get();
            } catch (Exception e) {
                res[i] = -5; // EIO
            }
        }
        return res;
    }

    static int one(FileChannel ch, Op op) {
        MemorySegment seg = op.buf();
        ByteBuffer bb = seg.asByteBuffer();
        long pos = op.offset();
        try {
            while (bb.hasRemaining()) {
                int n = op.write() ? ch.write(bb, pos) : ch.read(bb, pos);
                if (n < 0) {
                    break; // EOF
                }
                pos += n;
            }
            return bb.position();
        } catch (IOException e) {
            return -5;
        }
    }

    @Override
    public void close() {
        if (pool != null) {
            pool.shutdownNow();
        }
    }
}
