package dev.kvpool.bench;

import dev.kvpool.meta.registry.ReclaimPolicy;
import dev.kvpool.meta.sim.CacheEventTrace;
import dev.kvpool.meta.sim.MooncakeTrace;
import dev.kvpool.meta.sim.PolicySweep;
import dev.kvpool.meta.sim.PolicySweep.Result;
import dev.kvpool.meta.sim.PolicySweep.Trace;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.LocalDate;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Hit rate of each eviction policy versus capacity on Mooncake's traces ({@code ./kvpool bench policies}).
 *
 * <p>Every (trace, capacity, policy) run is {@link PolicySweep#replay}, the replay the console's what-if jobs run
 * too: a fresh {@code TraceSimulation} with one instance whose group has a hard
 * quota of {@code capacity} blocks and a soft water level of {@code --water} of it, fed the whole trace on the
 * trace's own clock through the real read path (prefix query, which refreshes access time), write path (two-phase
 * write of the missed blocks) and reclaimer (rounds after every request until under the water level, each round
 * {@code --step-percentage} of the blocks). Runs go one after another on the calling thread; the write path's
 * deleter thread frees evicted slots and is waited for after each round. The "unbounded" run (a quota far above
 * the trace's total block count, nothing ever evicted) gives each trace's ceiling.
 *
 * <p>TTL with no {@code ttl_seconds} is "oldest write first", which is what KVCM's LRU does (its access time is
 * refreshed by writes only, and an already cached block is not written again): it is the baseline the other
 * policies are compared with.
 */
final class PolicyBench {
    /** Held so the level sticks: JUL keeps loggers weakly. */
    private static final java.util.logging.Logger QUIET = java.util.logging.Logger.getLogger("dev.kvpool");

    private PolicyBench() {
    }

    static void run(Map<String, String> opt) throws IOException {
        QUIET.setLevel(java.util.logging.Level.WARNING); // "registered instance sim" once per run is noise here
        Opts o = new Opts(opt);
        int limit = o.integer("limit", Integer.MAX_VALUE);
        double water = o.number("water", 0.9);
        int stepPct = o.integer("step-percentage", 5);
        int lfuDecay = o.integer("lfu-decay", 60);
        List<Long> capacities = new ArrayList<>();
        for (String c : opt.getOrDefault("capacities", "1M,3M,10M,30M").split(",")) {
            capacities.add(tokens(c));
        }
        List<ReclaimPolicy> policies = new ArrayList<>();
        for (String p : opt.getOrDefault("policies", "LRU,LFU,TTL,PREFIX_LRU").split(",")) {
            policies.add(ReclaimPolicy.parse(p));
        }
        String svgDir = opt.getOrDefault("svg-dir", "docs/img");
        List<Trace> traces = new ArrayList<>();
        String which = opt.getOrDefault("trace", "both");
        for (String t : which.equals("both") ? new String[] {"conversation", "synthetic"} : which.split(",")) {
            if (t.startsWith("kafka:")) {
                List<CacheEventTrace.Op> ops = null;
                // the traffic a running pool recorded on kvpool.cache: what another policy or quota would have done
                String bootstrap = t.substring("kafka:".length());
                String instance = opt.get("instance");
                int blockTokens = o.integer("block-tokens", 16);
                System.out.printf(Locale.ROOT, "reading kvpool.cache from %s (%s)%n", bootstrap,
                        instance == null ? "every instance" : "instance " + instance);
                CacheEventTrace.Recorded rec = CacheEventTrace.read(bootstrap, instance, limit,
                        java.time.Duration.ofSeconds(30), n -> System.out.printf(Locale.ROOT, "  %,d records read%n", n));
                List<MooncakeTrace.Request> reqs = rec.requests();
                // writes as recorded (default), or as a connector's: each query writes what it missed
                if (!opt.getOrDefault("writes", "recorded").equals("misses")) {
                    ops = rec.ops();
                }
                if (rec.missing() > 0) {
                    System.out.printf(Locale.ROOT, "  warning: the metadata planes reported %,d operations missing from "
                            + "the topic (dropped while Kafka was slow or down, or undelivered): the replay is partial%n",
                            rec.missing());
                }
                if (reqs.isEmpty()) {
                    throw new IllegalArgumentException("no GetCacheLocation records" + (instance == null ? ""
                            : " of instance " + instance) + " on kvpool.cache at " + bootstrap);
                }
                String name = "kafka" + (instance == null ? "" : "-" + instance.replaceAll("[^A-Za-z0-9_.-]", "_"));
                traces.add(Trace.of(name, null, reqs, blockTokens, ops, true));
            } else {
                traces.add(PolicySweep.load(t, limit, true));
            }
        }

        System.out.printf(Locale.ROOT, "eviction policies: water level %.0f %% of the quota, step %d %% of the blocks per round, "
                + "LFU decay %d s; %s, %d cores, Java %s, %s%n", water * 100, stepPct, lfuDecay,
                System.getProperty("os.name") + " " + System.getProperty("os.arch"),
                Runtime.getRuntime().availableProcessors(), System.getProperty("java.version"),
                LocalDate.now(ZoneOffset.UTC));
        for (Trace t : traces) {
            System.out.printf(Locale.ROOT, "  %s: %,d requests, %,d blocks asked, %,d distinct (%.1f M tokens in blocks of %d)%n",
                    t.name(), t.requests().size(), t.blocks(), t.distinct(), t.distinct() * (double) t.blockTokens() / 1e6, t.blockTokens());
        }
        List<Result> results = new ArrayList<>();
        long all0 = System.nanoTime();
        for (Trace t : traces) {
            // ceiling: a quota the trace cannot fill (even at the water level), so nothing is ever evicted
            Result u = PolicySweep.unbounded(t, water, stepPct, lfuDecay, PolicySweep.NONE);
            results.add(u);
            progress(u);
            for (long tok : capacities) {
                long cap = tok / t.blockTokens();
                for (ReclaimPolicy p : policies) {
                    Result r = replay(t, p, tok, cap, water, stepPct, lfuDecay);
                    results.add(r);
                    progress(r);
                }
            }
        }
        double total = (System.nanoTime() - all0) / 1e9;
        System.out.println();
        System.out.print(table(results));
        System.out.printf(Locale.ROOT, "%n%d runs in %.1f s%n", results.size(), total);
        if (!svgDir.equals("none")) {
            Path dir = Path.of(svgDir);
            Files.createDirectories(dir);
            for (Trace t : traces) {
                List<Result> mine = results.stream().filter(r -> r.trace().equals(t.name())).toList();
                Path f = dir.resolve("policy-hit-rate-" + t.name() + ".svg");
                Files.writeString(f, svg(t, mine, water, stepPct));
                System.out.println("wrote " + f);
            }
        }
    }

    static Result replay(Trace t, ReclaimPolicy p, long tokens, long capBlocks, double water, int stepPct,
                         int lfuDecay) {
        return PolicySweep.replay(t, p, tokens, capBlocks, water, stepPct, lfuDecay, PolicySweep.NONE);
    }

    static void progress(Result r) {
        System.out.printf(Locale.ROOT, "  %-12s %9s tokens %,9d blocks  %-10s hit %6.2f %%  evicted %,9d  refused %,7d  "
                + "orphaned %5.2f %%  %6.1f s%n", r.trace(), r.unbounded() ? "unbounded" : human(r.tokens()),
                r.capacityBlocks(), r.policy(), 100 * r.hitRate(), r.evicted(), r.refused(), 100 * r.orphaned(), r.seconds());
    }

    /** "1M" → 1,000,000; "500K", "1.5M", "2G" and plain numbers too. */
    static long tokens(String s) {
        String v = s.trim().toUpperCase(Locale.ROOT);
        double mul = 1;
        if (v.endsWith("K")) {
            mul = 1e3;
        } else if (v.endsWith("M")) {
            mul = 1e6;
        } else if (v.endsWith("G")) {
            mul = 1e9;
        }
        if (mul > 1) {
            v = v.substring(0, v.length() - 1);
        }
        return Math.round(Double.parseDouble(v) * mul);
    }

    static String human(long tokens) {
        if (tokens >= 1_000_000 && tokens % 100_000 == 0) {
            return fmt(tokens / 1e6) + "M";
        }
        if (tokens >= 1_000 && tokens % 100 == 0) {
            return fmt(tokens / 1e3) + "K";
        }
        return Long.toString(tokens);
    }

    private static String fmt(double d) {
        return d == Math.rint(d) ? Long.toString((long) d) : String.format(Locale.ROOT, "%.1f", d);
    }

    /** The final table, as Markdown (also what docs/benchmarks.md shows). */
    static String table(List<Result> results) {
        Map<String, Double> ttl = new LinkedHashMap<>();
        Map<String, Double> ceiling = new LinkedHashMap<>();
        for (Result r : results) {
            if (r.policy().equals("TTL")) {
                ttl.put(r.trace() + "/" + r.tokens(), r.hitRate());
            }
            if (r.unbounded()) {
                ceiling.put(r.trace(), r.hitRate());
            }
        }
        StringBuilder sb = new StringBuilder();
        String[] head = {"trace", "capacity (tokens)", "blocks", "policy", "hit rate", "vs TTL (KVCM baseline)",
                "of ceiling", "evicted blocks", "refused blocks", "orphaned", "time"};
        List<String[]> rows = new ArrayList<>();
        for (Result r : results) {
            Double base = ttl.get(r.trace() + "/" + r.tokens());
            String vs;
            if (r.unbounded()) {
                vs = "ceiling";
            } else if (r.policy().equals("TTL")) {
                vs = "baseline";
            } else if (base == null) {
                vs = "–";
            } else if (base == 0) {
                vs = String.format(Locale.ROOT, "%+.2f pp", 100 * (r.hitRate() - base));
            } else {
                vs = String.format(Locale.ROOT, "%+.2f pp (%.2f×)", 100 * (r.hitRate() - base), r.hitRate() / base);
            }
            Double c = ceiling.get(r.trace());
            rows.add(new String[] {r.trace(), r.unbounded() ? "unbounded" : human(r.tokens()),
                    String.format(Locale.ROOT, "%,d", r.capacityBlocks()), r.policy(),
                    String.format(Locale.ROOT, "%.2f %%", 100 * r.hitRate()), vs,
                    c == null || c == 0 ? "–" : String.format(Locale.ROOT, "%.0f %%", 100 * r.hitRate() / c),
                    String.format(Locale.ROOT, "%,d", r.evicted()), String.format(Locale.ROOT, "%,d", r.refused()),
                    String.format(Locale.ROOT, "%.2f %%", 100 * r.orphaned()), String.format(Locale.ROOT, "%.1f s", r.seconds())});
        }
        int[] w = new int[head.length];
        for (int i = 0; i < head.length; i++) {
            w[i] = head[i].length();
            for (String[] row : rows) {
                w[i] = Math.max(w[i], row[i].length());
            }
        }
        line(sb, head, w);
        String[] sep = new String[head.length];
        for (int i = 0; i < head.length; i++) {
            sep[i] = i == 0 || i == 3 ? "-".repeat(w[i]) : "-".repeat(w[i] - 1) + ":";
        }
        line(sb, sep, w);
        for (String[] row : rows) {
            line(sb, row, w);
        }
        return sb.toString();
    }

    private static void line(StringBuilder sb, String[] cells, int[] w) {
        sb.append('|');
        for (int i = 0; i < cells.length; i++) {
            boolean left = i == 0 || i == 3;
            String c = cells[i];
            String pad = " ".repeat(Math.max(0, w[i] - c.length()));
            sb.append(' ').append(left ? c + pad : pad + c).append(" |");
        }
        sb.append('\n');
    }

    // ---- SVG -----------------------------------------------------------------------------------------------

    record Style(String colour, double width, double opacity, String dash, String shape) {
    }

    private static Style style(String policy) {
        return switch (policy) {
            case "LRU" -> new Style("#1f77b4", 6, 0.45, "", "circle");
            case "LFU" -> new Style("#ff7f0e", 3.5, 0.8, "", "square");
            case "TTL" -> new Style("#555555", 2, 1, " stroke-dasharray=\"5 3\"", "triangle");
            case "PREFIX_LRU" -> new Style("#2ca02c", 2, 1, "", "diamond");
            default -> new Style("#9467bd", 2, 1, "", "circle");
        };
    }

    private static String marker(Style st, double cx, double cy, String tip) {
        String t = tip == null ? "" : "<title>" + esc(tip) + "</title>";
        String shape = switch (st.shape) {
            case "square" -> String.format(Locale.ROOT, "<rect x=\"%.1f\" y=\"%.1f\" width=\"7\" height=\"7\"", cx - 3.5, cy - 3.5);
            case "triangle" -> String.format(Locale.ROOT, "<path d=\"M%.1f %.1f L%.1f %.1f L%.1f %.1f Z\"", cx, cy - 4.5,
                    cx + 4.5, cy + 3.5, cx - 4.5, cy + 3.5);
            case "diamond" -> String.format(Locale.ROOT, "<path d=\"M%.1f %.1f L%.1f %.1f L%.1f %.1f L%.1f %.1f Z\"",
                    cx, cy - 4.5, cx + 4.5, cy, cx, cy + 4.5, cx - 4.5, cy);
            default -> String.format(Locale.ROOT, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"5\"", cx, cy);
        };
        return shape + String.format(Locale.ROOT, " fill=\"%s\" fill-opacity=\"%.2f\">%s%s%n", st.colour,
                Math.max(st.opacity, 0.6), t, shape.startsWith("<rect") ? "</rect>" : shape.startsWith("<circle")
                        ? "</circle>" : "</path>");
    }

    private static final Map<String, String> LABEL = Map.of(
            "LRU", "LRU (last access)", "LFU", "LFU (log counter, decay)", "TTL", "TTL: oldest write (= KVCM's LRU)",
            "PREFIX_LRU", "prefix-aware LRU");

    /** Hit rate versus capacity on a log x axis, one line per policy, the unbounded ceiling dashed. */
    static String svg(Trace t, List<Result> results, double water, int stepPct) {
        int width = 800, height = 440, left = 70, right = 260, top = 56, bottom = 70;
        int pw = width - left - right, ph = height - top - bottom;
        List<Result> bounded = results.stream().filter(r -> !r.unbounded()).toList();
        double ceil = results.stream().filter(Result::unbounded).mapToDouble(Result::hitRate).findFirst().orElse(0);
        List<Long> caps = bounded.stream().map(Result::tokens).distinct().sorted().toList();
        if (caps.isEmpty()) {
            return "<svg xmlns=\"http://www.w3.org/2000/svg\"/>\n";
        }
        double lx0 = Math.log10(caps.getFirst()) - 0.12, lx1 = Math.log10(caps.getLast()) + 0.12;
        double maxY = Math.max(ceil, bounded.stream().mapToDouble(Result::hitRate).max().orElse(0)) * 100;
        int yStep = maxY <= 30 ? 5 : 10;
        int yMax = Math.max(yStep, (int) Math.ceil((maxY + 0.01) / yStep) * yStep);
        java.util.function.DoubleUnaryOperator x = tok -> left + (Math.log10(tok) - lx0) / (lx1 - lx0) * pw;
        java.util.function.DoubleUnaryOperator y = pct -> top + ph - pct / yMax * ph;
        StringBuilder s = new StringBuilder();
        s.append(String.format(Locale.ROOT, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
                + "viewBox=\"0 0 %d %d\" font-family=\"Helvetica, Arial, sans-serif\" font-size=\"12\">%n",
                width, height, width, height));
        String what = t.file() == null ? "recorded " + t.name() + " traffic" : "Mooncake " + t.name() + " trace";
        s.append(String.format(Locale.ROOT, "<title>Block hit rate versus capacity by eviction policy, %s</title>%n", esc(what)));
        s.append(String.format(Locale.ROOT, "<rect width=\"%d\" height=\"%d\" fill=\"white\"/>%n", width, height));
        s.append(String.format(Locale.ROOT, "<text x=\"%d\" y=\"22\" font-size=\"15\" font-weight=\"bold\">"
                + "Block hit rate vs capacity: %s</text>%n", left, esc(what)));
        s.append(String.format(Locale.ROOT, "<text x=\"%d\" y=\"40\" fill=\"#555\">%,d requests, %,d blocks asked, "
                + "%,d distinct; water level %.0f %%, step %d %%</text>%n", left, t.requests().size(), t.blocks(),
                t.distinct(), water * 100, stepPct));
        // grid and y axis
        for (int v = 0; v <= yMax; v += yStep) {
            double yy = y.applyAsDouble(v);
            s.append(String.format(Locale.ROOT, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"%s\"/>%n",
                    left, yy, left + pw, yy, v == 0 ? "#333" : "#e3e3e3"));
            s.append(String.format(Locale.ROOT, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%d %%</text>%n",
                    left - 6, yy + 4, v));
        }
        s.append(String.format(Locale.ROOT, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#333\"/>%n",
                left, top, left, top + ph));
        // x axis: a tick per measured capacity
        for (long c : caps) {
            double xx = x.applyAsDouble(c);
            s.append(String.format(Locale.ROOT, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#e3e3e3\"/>%n",
                    xx, top, xx, top + ph));
            s.append(String.format(Locale.ROOT, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#333\"/>%n",
                    xx, top + ph, xx, top + ph + 5));
            s.append(String.format(Locale.ROOT, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%s</text>%n",
                    xx, top + ph + 19, human(c)));
            s.append(String.format(Locale.ROOT, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\" fill=\"#777\" "
                    + "font-size=\"10\">%,d blocks</text>%n", xx, top + ph + 32, c / t.blockTokens()));
        }
        s.append(String.format(Locale.ROOT, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">capacity (tokens, log scale; "
                + "%d tokens per block)</text>%n", left + pw / 2.0, height - 12, t.blockTokens()));
        s.append(String.format(Locale.ROOT, "<text transform=\"translate(18 %.1f) rotate(-90)\" text-anchor=\"middle\">"
                + "block hit rate (prefix hits / blocks asked)</text>%n", top + ph / 2.0));
        // ceiling
        if (ceil > 0) {
            double yy = y.applyAsDouble(ceil * 100);
            s.append(String.format(Locale.ROOT, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#d62728\" "
                    + "stroke-width=\"1.5\" stroke-dasharray=\"6 4\"/>%n", left, yy, left + pw, yy));
        }
        // one line per policy; where lines coincide the wider, paler ones underneath stay visible
        List<String> pols = bounded.stream().map(Result::policy).distinct().toList();
        for (String p : pols) {
            Style st = style(p);
            List<Result> pts = bounded.stream().filter(r -> r.policy().equals(p))
                    .sorted(java.util.Comparator.comparingLong(Result::tokens)).toList();
            StringBuilder d = new StringBuilder();
            for (Result r : pts) {
                d.append(d.isEmpty() ? "M" : " L").append(String.format(Locale.ROOT, "%.1f %.1f",
                        x.applyAsDouble(r.tokens()), y.applyAsDouble(100 * r.hitRate())));
            }
            s.append(String.format(Locale.ROOT, "<path d=\"%s\" fill=\"none\" stroke=\"%s\" stroke-width=\"%.1f\" "
                    + "stroke-opacity=\"%.2f\"%s/>%n", d, st.colour, st.width, st.opacity, st.dash));
            for (Result r : pts) {
                s.append(marker(st, x.applyAsDouble(r.tokens()), y.applyAsDouble(100 * r.hitRate()),
                        String.format(Locale.ROOT, "%s, %s tokens: %.2f %%", p, human(r.tokens()), 100 * r.hitRate())));
            }
        }
        // legend
        int lx = left + pw + 18, ly = top + 6;
        int i = 0;
        for (String p : pols) {
            Style st = style(p);
            int yy = ly + 22 * i++;
            s.append(String.format(Locale.ROOT, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"%s\" "
                    + "stroke-width=\"%.1f\" stroke-opacity=\"%.2f\"%s/>%n", lx, yy, lx + 28, yy, st.colour, st.width,
                    st.opacity, st.dash));
            s.append(marker(st, lx + 14, yy, null));
            s.append(String.format(Locale.ROOT, "<text x=\"%d\" y=\"%d\">%s</text>%n", lx + 36, yy + 4,
                    esc(LABEL.getOrDefault(p, p))));
        }
        if (ceil > 0) {
            int yy = ly + 22 * i;
            s.append(String.format(Locale.ROOT, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#d62728\" "
                    + "stroke-width=\"1.5\" stroke-dasharray=\"6 4\"/>%n", lx, yy, lx + 28, yy));
            s.append(String.format(Locale.ROOT, "<text x=\"%d\" y=\"%d\">unbounded (%.1f %%)</text>%n", lx + 36,
                    yy + 4, 100 * ceil));
        }
        s.append("</svg>\n");
        return s.toString();
    }

    private static String esc(String v) {
        return v.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("\"", "&quot;");
    }
}
