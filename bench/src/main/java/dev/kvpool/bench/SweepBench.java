package dev.kvpool.bench;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.kvpool.api.storage.SlabFiles;
import dev.kvpool.meta.registry.Locations;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ThreadLocalRandom;

/**
 * The storage sweep ({@code POST /api/v1/storage/sweeps}) over a directory of {@code --blocks} live blocks' slab
 * files and {@code --orphans} slab files that hold no block, against the plainest tool that does the same
 * filesystem work without asking any index: {@code find <dir> -name 'slab_*' -mmin +60 -delete} over the same
 * directory with the same files (it reads the directory, stats every entry and unlinks the old ones). Alternated
 * A B / B A over {@code --rounds}; the ratio is sweep time over find time. Run it on the host of the plane's file
 * storage (the default startup config's {@code /tmp/nfs/}), against a plane of its own.
 */
final class SweepBench {
    private SweepBench() {
    }

    private static final FileTime OLD = FileTime.fromMillis(System.currentTimeMillis() - 3 * 3_600_000L);

    static void run(Map<String, String> opt) throws Exception {
        Opts o = new Opts(opt);
        int blocks = o.integer("blocks", 100_000);
        int orphans = o.integer("orphans", 200_000);
        int rounds = o.integer("rounds", 3);
        if (blocks < 1 || orphans < 1 || rounds < 1) {
            throw new IllegalArgumentException("--blocks, --orphans and --rounds must be at least 1");
        }
        String url = o.url();
        String instance = "bench-sweep-" + System.currentTimeMillis();
        HttpClient http = HttpClient.newHttpClient();
        ObjectMapper json = new ObjectMapper();
        try (KvcmHttp kv = new KvcmHttp(url)) {
            Main.register(kv, instance, 16, 4096);
            Set<Path> live = new LinkedHashSet<>();
            for (int off = 0; off < blocks; off += 512) {
                live.addAll(save(kv, instance, ThreadLocalRandom.current().longs(Math.min(512, blocks - off)).toArray()));
            }
            Path dir = live.iterator().next().getParent();
            Files.createDirectories(dir);
            for (Path p : live) { // what the writers left: written just now, so find keeps them too
                Files.write(p, new byte[0]);
                Files.write(SlabFiles.checksums(p), new byte[0]);
            }
            System.out.printf(Locale.ROOT, "sweep: %s holds %,d live slab files (%,d blocks, with their .crc) and gets "
                    + "%,d old files holding no block per run; vs find -name 'slab_*' -mmin +60 -delete%n", dir,
                    live.size() * 2, blocks, orphans);
            long next = 1L << 28; // far above the live files' numbers; each run's orphans above the last's
            List<Double> ratios = new ArrayList<>();
            for (int r = 0; r < rounds; r++) {
                double sweep = 0, find = 0;
                for (int side = 0; side < 2; side++) {
                    boolean sweepNow = (side == 0) == (r % 2 == 0);
                    orphans(dir, next, orphans);
                    next += orphans;
                    if (sweepNow) {
                        sweep = sweep(http, json, url, instance, orphans);
                    } else {
                        find = find(dir);
                    }
                    try (var left = Files.list(dir)) {
                        long n = left.count();
                        if (n != live.size() * 2L) {
                            throw new IOException((sweepNow ? "the sweep" : "find") + " left " + n
                                    + " files; expected the " + live.size() * 2 + " live ones");
                        }
                    }
                }
                ratios.add(sweep / find);
                System.out.printf(Locale.ROOT, "  round %d: sweep %.2f s (%,.0f files/s deleted), find %.2f s "
                        + "(%,.0f files/s): %.2f×%n", r + 1, sweep, orphans / sweep, find, orphans / find, sweep / find);
            }
            ratios.sort(Double::compare);
            System.out.printf(Locale.ROOT, "sweep / find, median of %d rounds: %.2f× (%.2f–%.2f)%n", rounds,
                    ratios.get(ratios.size() / 2), ratios.getFirst(), ratios.getLast());
            // the recurring cost: a sweep that finds nothing to delete, against find reading and stating the same
            List<Double> idle = new ArrayList<>();
            for (int r = 0; r < rounds; r++) {
                double s = sweep(http, json, url, instance, 0);
                double f = find(dir);
                idle.add(s / f);
                System.out.printf(Locale.ROOT, "  nothing to delete: sweep %.3f s (%,.0f files/s), find %.3f s: %.2f×%n",
                        s, live.size() * 2 / s, f, s / f);
            }
            idle.sort(Double::compare);
            System.out.printf(Locale.ROOT, "nothing to delete, sweep / find, median of %d rounds: %.2f×%n", rounds,
                    idle.get(idle.size() / 2));
            for (Path p : live) {
                Files.deleteIfExists(p);
                Files.deleteIfExists(SlabFiles.checksums(p));
            }
        }
    }

    /** Saves the keys and returns the slab files their locations name. */
    private static Set<Path> save(KvcmHttp kv, String instance, long[] keys) throws IOException {
        Set<Path> files = new LinkedHashSet<>();
        for (var loc : WriteBench.save(kv, instance, keys).getLocationsList()) {
            String uri = loc.getLocationSpecs(0).getUri();
            if (!uri.startsWith("file://")) {
                throw new IOException("the plane's storage is not a file storage: " + uri);
            }
            files.add(Path.of(URI.create(uri).getPath()));
        }
        return files;
    }

    /** {@code n} empty slab files numbered from {@code first}, last written three hours ago (untimed). */
    private static void orphans(Path dir, long first, int n) throws IOException {
        for (long f = first; f < first + n; f++) {
            Path p = dir.resolve(Locations.slabName(f));
            Files.write(p, new byte[0]);
            Files.setLastModifiedTime(p, OLD);
        }
    }

    /** Runs a sweep over REST and returns its own time in seconds, printing its progress. */
    private static double sweep(HttpClient http, ObjectMapper json, String url, String instance, int expected)
            throws Exception {
        HttpResponse<String> started = http.send(HttpRequest.newBuilder(URI.create(url + "/api/v1/storage/sweeps"))
                .POST(HttpRequest.BodyPublishers.noBody()).build(), HttpResponse.BodyHandlers.ofString());
        if (started.statusCode() != 202) {
            throw new IOException("POST /api/v1/storage/sweeps answered " + started.statusCode() + ": " + started.body());
        }
        long lastPrint = System.nanoTime();
        while (true) {
            Thread.sleep(100);
            JsonNode r = json.readTree(http.send(HttpRequest.newBuilder(URI.create(url + "/api/v1/storage/sweeps/latest"))
                    .build(), HttpResponse.BodyHandlers.ofString()).body());
            String state = r.path("state").asText();
            if (state.equals("running")) {
                if (System.nanoTime() - lastPrint > 1_000_000_000L) {
                    System.out.printf(Locale.ROOT, "    sweeping: %,d files scanned, directory %d of %d%n",
                            r.path("scanned").asLong(), r.path("dirs_done").asInt() + 1, r.path("dirs_total").asInt());
                    lastPrint = System.nanoTime();
                }
                continue;
            }
            if (!state.equals("done")) {
                throw new IOException("the sweep ended " + state + ": " + r.path("error").asText());
            }
            long deleted = 0;
            for (JsonNode d : r.path("dirs")) {
                if (instance.equals(d.path("instance").asText())) {
                    deleted = d.path("deleted_files").asLong();
                }
            }
            if (deleted != expected) {
                throw new IOException("the sweep deleted " + deleted + " of the " + expected + " files: " + r);
            }
            return r.path("took_ms").asLong() / 1000.0;
        }
    }

    private static double find(Path dir) throws Exception {
        long t0 = System.nanoTime();
        Process p = new ProcessBuilder("find", dir.toString(), "-maxdepth", "1", "-name", "slab_*", "-mmin", "+60",
                "-delete").inheritIO().start();
        if (p.waitFor() != 0) {
            throw new IOException("find exited " + p.exitValue());
        }
        return (System.nanoTime() - t0) / 1e9;
    }
}
