package dev.kvpool.testing;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

/**
 * One standalone {@code redis-server} of the test's own on a free port, without persistence, which the test may
 * stop (SIGKILL) and start again on the same port: a Redis restarted without its data, as an outage leaves it.
 */
public final class RedisServer implements AutoCloseable {
    private final Path dir;
    private final int port;
    private Process process;

    private RedisServer(Path dir, int port) {
        this.dir = dir;
        this.port = port;
    }

    public static RedisServer start() {
        try {
            int port;
            try (ServerSocket s = new ServerSocket(0)) {
                s.setReuseAddress(true);
                port = s.getLocalPort();
            }
            RedisServer r = new RedisServer(Files.createTempDirectory("kvpool-redis-"), port);
            r.startAgain();
            return r;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    public int port() {
        return port;
    }

    public String url() {
        return "redis://127.0.0.1:" + port;
    }

    /** Kills the server: its data is gone, connections are refused until {@link #startAgain()}. */
    public void stop() {
        if (process != null) {
            process.destroyForcibly();
            try {
                process.waitFor(10, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            process = null;
        }
    }

    /** Starts an empty server on the same port. */
    public void startAgain() {
        try {
            process = ChildProcesses.killOnExit(new ProcessBuilder("redis-server", "--port", Integer.toString(port),
                    "--bind", "127.0.0.1", "--dir", dir.toString(), "--save", "", "--appendonly", "no")
                    .redirectErrorStream(true)
                    .redirectOutput(ProcessBuilder.Redirect.appendTo(dir.resolve("redis.log").toFile())).start());
            long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
            while (true) {
                try (Socket s = new Socket()) {
                    s.connect(new InetSocketAddress("127.0.0.1", port), 200);
                    return;
                } catch (IOException e) {
                    if (System.nanoTime() > until || !process.isAlive()) {
                        throw new IllegalStateException("redis-server on port " + port + " did not start; see "
                                + dir.resolve("redis.log"));
                    }
                    Thread.sleep(50);
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    @Override
    public void close() {
        stop();
    }
}
