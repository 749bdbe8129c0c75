package dev.kvpool.testing;

import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * A real Redis Cluster of {@code n} primaries from the local {@code redis-server} binary (the Debian package CI
 * installs): one process per node on free ports in a temporary directory, joined with
 * {@code redis-cli --cluster create}, killed on {@link #close()}. Lets cluster tests run wherever Redis is
 * installed instead of only where someone started a cluster by hand.
 */
public final class RedisCluster implements AutoCloseable {
    private final List<Process> nodes = new ArrayList<>();
    private final List<Integer> ports = new ArrayList<>();
    private final Path dir;

    private RedisCluster(Path dir) {
        this.dir = dir;
    }

    /** True when redis-server and redis-cli are on the PATH. */
    public static boolean available() {
        return onPath("redis-server") && onPath("redis-cli");
    }

    private static boolean onPath(String exe) {
        String path = System.getenv("PATH");
        if (path == null) {
            return false;
        }
        for (String d : path.split(File.pathSeparator)) {
            if (Files.isExecutable(Path.of(d, exe))) {
                return true;
            }
        }
        return false;
    }

    public static RedisCluster start(int n) {
        return start(n, 0);
    }

    /**
     * {@code primaries} primaries with {@code replicasEach} replicas each ({@code redis-cli} pairs them), and a
     * node timeout of 2 s so that a killed primary's replica takes over within seconds.
     */
    public static RedisCluster start(int primaries, int replicasEach) {
        try {
            RedisCluster c = new RedisCluster(Files.createTempDirectory("kvpool-redis-cluster-"));
            try {
                c.launch(primaries * (1 + replicasEach), replicasEach);
                return c;
            } catch (RuntimeException | IOException | InterruptedException e) {
                c.close();
                throw e;
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    private void launch(int n, int replicasEach) throws IOException, InterruptedException {
        for (int i = 0; i < n; i++) {
            int port = freePort();
            Path d = Files.createDirectories(dir.resolve(Integer.toString(port)));
            Process p = ChildProcesses.killOnExit(new ProcessBuilder("redis-server", "--port", Integer.toString(port),
                    "--bind", "127.0.0.1", "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
                    "--dir", d.toString(), "--save", "", "--appendonly", "no", "--cluster-node-timeout", "2000")
                    .redirectErrorStream(true)
                    .redirectOutput(d.resolve("redis.log").toFile()).start());
            nodes.add(p);
            ports.add(port);
        }
        for (int port : ports) {
            awaitListening(port);
        }
        List<String> cmd = new ArrayList<>(List.of("redis-cli", "--cluster", "create"));
        ports.forEach(p -> cmd.add("127.0.0.1:" + p));
        cmd.addAll(List.of("--cluster-replicas", Integer.toString(replicasEach), "--cluster-yes"));
        Process create = new ProcessBuilder(cmd).redirectErrorStream(true)
                .redirectOutput(dir.resolve("create.log").toFile()).start();
        if (!create.waitFor(60, TimeUnit.SECONDS) || create.exitValue() != 0) {
            throw new IllegalStateException("redis-cli --cluster create failed; see " + dir.resolve("create.log"));
        }
        long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        for (int port : ports) {
            while (!clusterOk(port)) {
                if (System.nanoTime() > until) {
                    throw new IllegalStateException("cluster not ok on port " + port);
                }
                Thread.sleep(100);
            }
        }
    }

    private static boolean clusterOk(int port) throws IOException, InterruptedException {
        Process p = new ProcessBuilder("redis-cli", "-p", Integer.toString(port), "cluster", "info")
                .redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes());
        p.waitFor(10, TimeUnit.SECONDS);
        return out.contains("cluster_state:ok");
    }

    /** Every node's port, primaries and replicas, in start order. */
    public List<Integer> ports() {
        return List.copyOf(ports);
    }

    /**
     * Runs {@code redis-cli -p <port> <args>} and answers its output, trimmed (one reply per line), failing on a
     * non-zero exit. For what a test does to the cluster itself: failovers, slot moves.
     */
    public String cli(int port, String... args) {
        List<String> cmd = new ArrayList<>(List.of("redis-cli", "-p", Integer.toString(port)));
        cmd.addAll(List.of(args));
        try {
            Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
            String out = new String(p.getInputStream().readAllBytes()).trim();
            if (!p.waitFor(30, TimeUnit.SECONDS) || p.exitValue() != 0) {
                throw new IllegalStateException(String.join(" ", cmd) + " failed: " + out);
            }
            return out;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    /** Kills one node as {@code kill -9} would. */
    public void kill(int port) {
        Process p = nodes.get(ports.indexOf(port));
        p.destroyForcibly();
        try {
            p.waitFor(10, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** {@code redis://127.0.0.1:<port>} per node. */
    public List<String> connectionStrings() {
        return ports.stream().map(p -> "redis://127.0.0.1:" + p).toList();
    }

    @Override
    public void close() {
        for (Process p : nodes) {
            p.destroyForcibly();
        }
        for (Process p : nodes) {
            try {
                p.waitFor(10, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    private static void awaitListening(int port) throws InterruptedException {
        long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (System.nanoTime() < until) {
            try (Socket s = new Socket()) {
                s.connect(new InetSocketAddress("127.0.0.1", port), 200);
                return;
            } catch (IOException e) {
                Thread.sleep(50);
            }
        }
        throw new IllegalStateException("redis-server on port " + port + " did not start");
    }

    private static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0)) {
            s.setReuseAddress(true);
            return s.getLocalPort();
        }
    }
}
