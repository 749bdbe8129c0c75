package dev.kvpool.meta.store.embedded;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.zip.CRC32C;

/**
 * Snapshot format 2 ({@code snapshot-N.kvs}): each shard's open-addressing table as it lies in memory — four columns
 * of {@code capacity} longs — so that loading is reading: no decoding, no rehashing. A table holds only where
 * {@link dev.kvpool.meta.index.KeyHash#mix} put its keys, so the file names the hash version it was written with;
 * another version (or another shard count) is loaded by re-inserting every key instead.
 *
 * <p>Layout, little-endian: the 16-byte file header {@code "KVPIDX02", format, hash version}, then sections
 * {@code [int type][int crc32c][long length][payload]}: RECORDS (a store-record {@link Frame}), per shard a SHARD
 * header (instance, shard count, shard, capacity, size, the bytes of its columns, the side map of extra replicas)
 * followed by its columns as COLUMN chunks of at most {@link #CHUNK_LONGS} longs, each with its own CRC; per index a
 * SESSIONS frame (also what makes an index without keys exist); END. A file without END, or with anything after it,
 * is damaged. The CRC is checked per 4 MiB chunk, not per block.
 */
final class SnapshotFile {
    static final String SUFFIX = ".kvs";
    static final int FORMAT = 2;
    /** Bump when {@link dev.kvpool.meta.index.KeyHash#mix} or {@link LongTable}'s slot function changes. */
    static final int HASH_VERSION = 1;
    static final int RECORDS = 1, SHARD = 2, COLUMN = 3, SESSIONS = 4, END = 5;
    static final int CHUNK_LONGS = 1 << 19; // 4 MiB
    /** Bytes per read while loading: fits a core's L2 cache. */
    private static final int PIECE = 256 << 10;
    private static final byte[] MAGIC = "KVPIDX02".getBytes(StandardCharsets.US_ASCII);
    private static final int HEAD = 16;

    private SnapshotFile() {
    }

    /** Bytes the columns of a table of this capacity take in the file, section headers included. */
    static long columnBytes(int capacity) {
        long chunks = (capacity + (long) CHUNK_LONGS - 1) / CHUNK_LONGS;
        return 4 * (chunks * HEAD + 8L * capacity);
    }

    /**
     * Writes sections in order; the caller fsyncs and installs the file. Through a FileOutputStream, not a
     * FileChannel: a channel closes for good when the writing thread is interrupted (see {@link Journal}).
     */
    static final class Writer implements AutoCloseable {
        private final java.io.FileOutputStream out;
        private final byte[] chunk = new byte[HEAD + CHUNK_LONGS * 8];
        private final ByteBuffer buf = ByteBuffer.wrap(chunk).order(ByteOrder.LITTLE_ENDIAN);
        private final CRC32C crc = new CRC32C();
        private long written;

        Writer(Path file) throws IOException {
            out = new java.io.FileOutputStream(file.toFile());
            ByteBuffer h = ByteBuffer.allocate(HEAD).order(ByteOrder.LITTLE_ENDIAN);
            h.put(MAGIC).putInt(FORMAT).putInt(HASH_VERSION);
            write(h.array(), 0, HEAD);
        }

        long bytes() {
            return written;
        }

        private void write(byte[] b, int off, int len) throws IOException {
            out.write(b, off, len);
            written += len;
        }

        /** One section whose payload is the remaining bytes of {@code payload} (a heap buffer). */
        void section(int type, ByteBuffer payload) throws IOException {
            int len = payload.remaining();
            int off = payload.arrayOffset() + payload.position();
            crc.reset();
            crc.update(payload.array(), off, len);
            ByteBuffer h = ByteBuffer.allocate(HEAD).order(ByteOrder.LITTLE_ENDIAN);
            h.putInt(type).putInt((int) crc.getValue()).putLong(len);
            write(h.array(), 0, HEAD);
            write(payload.array(), off, len);
        }

        void shard(String instance, int shardCount, int shard, LongTable.Image img) throws IOException {
            byte[] id = instance.getBytes(StandardCharsets.UTF_8);
            long extraWords = 0;
            for (long[] v : img.extra().values()) {
                extraWords += 3 + v.length;
            }
            long headerBytes = 4L + id.length + 4 * 4 + 8 + 4 + extraWords * 8L;
            if (headerBytes > Integer.MAX_VALUE - 16) {
                throw new IOException("shard " + shard + " of " + instance + ": too many multi-replica keys to snapshot");
            }
            ByteBuffer h = ByteBuffer.allocate((int) headerBytes).order(ByteOrder.LITTLE_ENDIAN);
            h.putInt(id.length).put(id).putInt(shardCount).putInt(shard).putInt(img.capacity()).putInt(img.size())
                    .putLong(columnBytes(img.capacity())).putInt(img.extra().size());
            for (Map.Entry<Long, long[]> e : img.extra().entrySet()) {
                h.putLong(e.getKey()).putInt(e.getValue().length);
                for (long w : e.getValue()) {
                    h.putLong(w);
                }
            }
            h.flip();
            section(SHARD, h);
            column(img.keys());
            column(img.as());
            column(img.bs());
            column(img.metas());
        }

        private void column(long[] col) throws IOException {
            for (int off = 0; off < col.length; off += CHUNK_LONGS) {
                int n = Math.min(CHUNK_LONGS, col.length - off);
                buf.clear().position(HEAD);
                buf.asLongBuffer().put(col, off, n);
                crc.reset();
                crc.update(chunk, HEAD, n * 8);
                buf.clear();
                buf.putInt(COLUMN).putInt((int) crc.getValue()).putLong(n * 8L);
                write(chunk, 0, HEAD + n * 8);
            }
        }

        void end() throws IOException {
            section(END, ByteBuffer.allocate(0));
        }

        void force() throws IOException {
            out.getFD().sync();
        }

        @Override
        public void close() throws IOException {
            out.close();
        }
    }

    /** What a loaded snapshot delivers, in file order. */
    interface Sink {
        /** A RECORDS or SESSIONS frame (big-endian, heap, as {@link Frame#read} wants it). */
        void frame(ByteBuffer payload);

        /**
         * A shard's table; {@code sameLayout} when its slots can be taken as they are (same shard count and hash
         * version), else its keys must be re-inserted.
         */
        void shard(String instance, int shardCount, int shard, LongTable.Image img, boolean sameLayout);
    }

    private record ShardAt(String instance, int shardCount, int shard, int capacity, int size, long columnsAt,
                           Map<Long, long[]> extra) {
    }

    /** True when the file starts like a format-2 snapshot. */
    static boolean isFormat2(Path p) throws IOException {
        try (FileChannel ch = FileChannel.open(p, StandardOpenOption.READ)) {
            ByteBuffer h = ByteBuffer.allocate(8);
            while (h.hasRemaining() && ch.read(h) >= 0) {
                // a file shorter than the magic is not format 2
            }
            return !h.hasRemaining() && java.util.Arrays.equals(h.array(), MAGIC);
        }
    }

    /**
     * Reads the whole file: section headers in one pass, then the shards' columns by {@code threads} threads with
     * positional reads (each thread its own 4 MiB buffer), then delivers everything in file order.
     *
     * @param shardCount the shard count the index is opened with (another count is delivered as not same layout)
     * @return bytes read
     */
    static long load(Path p, int shardCount, int threads, java.util.function.LongConsumer progress, Sink sink)
            throws IOException {
        try (FileChannel ch = FileChannel.open(p, StandardOpenOption.READ)) {
            long size = ch.size();
            ByteBuffer fh = ByteBuffer.allocate(HEAD).order(ByteOrder.LITTLE_ENDIAN);
            readFully(ch, fh, 0, p);
            progress.accept(HEAD);
            fh.flip();
            byte[] magic = new byte[8];
            fh.get(magic);
            int format = fh.getInt(), hashVersion = fh.getInt();
            if (!java.util.Arrays.equals(magic, MAGIC) || format != FORMAT) {
                throw new IOException(p + " is not a format-2 index snapshot");
            }
            List<Object> order = new ArrayList<>(); // ByteBuffer frames and ShardAt, in file order
            long pos = HEAD;
            boolean ended = false;
            ByteBuffer sh = ByteBuffer.allocate(HEAD).order(ByteOrder.LITTLE_ENDIAN);
            CRC32C crc = new CRC32C();
            while (pos < size) {
                if (ended) {
                    throw new IOException(p + " is damaged: bytes after its end at offset " + pos);
                }
                sh.clear();
                readFully(ch, sh, pos, p);
                sh.flip();
                int type = sh.getInt(), sum = sh.getInt();
                long len = sh.getLong();
                if (len < 0 || len > Integer.MAX_VALUE - 16 || pos + HEAD + len > size) {
                    throw new IOException(p + " is damaged at offset " + pos + " (section length " + len + ")");
                }
                ByteBuffer payload = ByteBuffer.allocate((int) len);
                readFully(ch, payload, pos + HEAD, p);
                crc.reset();
                crc.update(payload.array(), 0, (int) len);
                if ((int) crc.getValue() != sum) {
                    throw new IOException(p + " is damaged at offset " + pos + " (checksum)");
                }
                payload.flip();
                pos += HEAD + len;
                progress.accept(HEAD + len);
                switch (type) {
                    case RECORDS, SESSIONS -> order.add(payload); // Frame's own byte order (big-endian)
                    case SHARD -> {
                        ShardAt s = shardHeader(payload.order(ByteOrder.LITTLE_ENDIAN), pos, p);
                        order.add(s);
                        pos += columnBytes(s.capacity());
                        if (pos > size) {
                            throw new IOException(p + " is damaged: shard " + s.shard() + " of " + s.instance()
                                    + " runs past the end");
                        }
                    }
                    case END -> ended = true;
                    default -> throw new IOException(p + " is damaged: section type " + type + " at " + (pos - HEAD - len));
                }
            }
            if (!ended) {
                throw new IOException(p + " is damaged: no end section");
            }
            List<ShardAt> shards = new ArrayList<>();
            for (Object o : order) {
                if (o instanceof ShardAt s) {
                    shards.add(s);
                }
            }
            LongTable.Image[] images = readShards(ch, p, shards, threads, progress);
            int next = 0;
            boolean hashOk = hashVersion == HASH_VERSION;
            for (Object o : order) {
                if (o instanceof ShardAt s) {
                    sink.shard(s.instance(), s.shardCount(), s.shard(), images[next++],
                            hashOk && s.shardCount() == shardCount);
                } else {
                    sink.frame((ByteBuffer) o);
                }
            }
            return size;
        }
    }

    private static ShardAt shardHeader(ByteBuffer b, long columnsAt, Path p) throws IOException {
        try {
            byte[] id = new byte[b.getInt()];
            b.get(id);
            int shardCount = b.getInt(), shard = b.getInt(), capacity = b.getInt(), size = b.getInt();
            long colBytes = b.getLong();
            int extras = b.getInt();
            if (capacity < 1 || size < 0 || size > capacity || colBytes != columnBytes(capacity) || extras < 0
                    || shard < 0 || shard >= shardCount) {
                throw new IOException(p + " is damaged: shard header (capacity " + capacity + ", size " + size + ")");
            }
            Map<Long, long[]> extra = new HashMap<>();
            for (int i = 0; i < extras; i++) {
                long key = b.getLong();
                long[] w = new long[b.getInt()];
                for (int j = 0; j < w.length; j++) {
                    w[j] = b.getLong();
                }
                extra.put(key, w);
            }
            return new ShardAt(new String(id, StandardCharsets.UTF_8), shardCount, shard, capacity, size, columnsAt,
                    extra);
        } catch (RuntimeException e) { // a short or negative length inside a section whose CRC matched
            throw new IOException(p + " is damaged: shard header unreadable (" + e + ")", e);
        }
    }

    private static LongTable.Image[] readShards(FileChannel ch, Path p, List<ShardAt> shards, int threads,
                                                java.util.function.LongConsumer progress) throws IOException {
        LongTable.Image[] out = new LongTable.Image[shards.size()];
        if (shards.isEmpty()) {
            return out;
        }
        int n = Math.max(1, Math.min(threads, shards.size()));
        ExecutorService pool = Executors.newFixedThreadPool(n, r -> {
            Thread t = new Thread(r, "kvpool-index-load");
            t.setDaemon(true);
            return t;
        });
        try {
            // largest first, so the last shard does not run alone
            List<Integer> bySize = new ArrayList<>();
            for (int i = 0; i < shards.size(); i++) {
                bySize.add(i);
            }
            bySize.sort((x, y) -> Integer.compare(shards.get(y).capacity(), shards.get(x).capacity()));
            java.util.concurrent.ConcurrentLinkedQueue<Integer> queue = new java.util.concurrent.ConcurrentLinkedQueue<>(bySize);
            List<Future<?>> fs = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                fs.add(pool.submit(() -> {
                    ByteBuffer buf = ByteBuffer.allocateDirect(PIECE).order(ByteOrder.LITTLE_ENDIAN);
                    CRC32C crc = new CRC32C();
                    for (Integer k; (k = queue.poll()) != null; ) {
                        ShardAt s = shards.get(k);
                        long pos = s.columnsAt();
                        long[][] cols = new long[4][];
                        for (int c = 0; c < 4; c++) {
                            cols[c] = new long[s.capacity()];
                            long at = pos;
                            pos = readColumn(ch, p, pos, cols[c], buf, crc);
                            progress.accept(pos - at);
                        }
                        out[k] = new LongTable.Image(s.capacity(), s.size(), cols[0], cols[1], cols[2], cols[3],
                                s.extra()); // published to the caller by Future.get

                    }
                    return null;
                }));
            }
            for (Future<?> f : fs) {
                f.get();
            }
            return out;
        } catch (ExecutionException e) {
            if (e.getCause() instanceof IOException io) {
                throw io;
            }
            throw new IOException("loading " + p + " failed", e.getCause());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted while loading " + p, e);
        } finally {
            pool.shutdownNow();
        }
    }

    /**
     * Reads one column: per chunk its 16-byte header, then the payload in {@link #PIECE}-byte reads, each checked
     * into the chunk's CRC and copied into the array while it is still in the CPU's cache (a 4 MiB buffer read
     * whole and then walked twice ran at a third of the speed of reading the file).
     */
    private static long readColumn(FileChannel ch, Path p, long pos, long[] dst, ByteBuffer buf, CRC32C crc)
            throws IOException {
        for (int off = 0; off < dst.length; ) {
            int n = Math.min(CHUNK_LONGS, dst.length - off);
            buf.clear().limit(HEAD);
            readFully(ch, buf, pos, p);
            buf.flip();
            int type = buf.getInt(), sum = buf.getInt();
            long len = buf.getLong();
            if (type != COLUMN || len != n * 8L) {
                throw new IOException(p + " is damaged at offset " + pos + " (column chunk expected)");
            }
            crc.reset();
            long at = pos + HEAD;
            for (int done = 0; done < n; ) {
                int m = Math.min(PIECE / 8, n - done);
                buf.clear().limit(m * 8);
                readFully(ch, buf, at, p);
                buf.flip();
                crc.update(buf.duplicate());
                buf.asLongBuffer().get(dst, off + done, m);
                done += m;
                at += m * 8L;
            }
            if ((int) crc.getValue() != sum) {
                throw new IOException(p + " is damaged at offset " + pos + " (column checksum)");
            }
            off += n;
            pos = at;
        }
        return pos;
    }

    private static void readFully(FileChannel ch, ByteBuffer b, long pos, Path p) throws IOException {
        long at = pos;
        while (b.hasRemaining()) {
            int r = ch.read(b, at);
            if (r < 0) {
                throw new IOException(p + " is damaged: ends at " + at);
            }
            at += r;
        }
    }
}
