package dev.kvpool.testing;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * A TCP forwarder on a port of its own that sends every new connection to one target port, which the test can
 * switch: what a virtual IP or a proxy in front of a Redis failover does. A switch closes every connection it
 * forwards, as a failover does to the clients of the old primary.
 */
public final class TcpSwitch implements AutoCloseable {
    private final ServerSocket server;
    private final Set<Socket> open = ConcurrentHashMap.newKeySet();
    private volatile int target;

    private TcpSwitch(ServerSocket server, int target) {
        this.server = server;
        this.target = target;
        Thread.ofVirtual().name("tcp-switch-accept").start(this::accept);
    }

    public static TcpSwitch to(int targetPort) {
        try {
            ServerSocket s = new ServerSocket();
            s.bind(new InetSocketAddress("127.0.0.1", 0));
            return new TcpSwitch(s, targetPort);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    public int port() {
        return server.getLocalPort();
    }

    /** New connections go to {@code targetPort}; the ones open now are closed. */
    public void switchTo(int targetPort) {
        target = targetPort;
        for (Socket s : open) {
            closeQuietly(s);
        }
        open.clear();
    }

    private void accept() {
        while (!server.isClosed()) {
            try {
                Socket in = server.accept();
                Socket out = new Socket();
                try {
                    out.connect(new InetSocketAddress("127.0.0.1", target), 2000);
                } catch (IOException e) {
                    closeQuietly(in); // the target is down: the client sees a closed connection
                    continue;
                }
                in.setTcpNoDelay(true);
                out.setTcpNoDelay(true);
                open.add(in);
                open.add(out);
                Thread.ofVirtual().start(() -> pump(in, out));
                Thread.ofVirtual().start(() -> pump(out, in));
            } catch (IOException e) {
                if (server.isClosed()) {
                    return;
                }
            }
        }
    }

    private void pump(Socket from, Socket to) {
        byte[] buf = new byte[64 * 1024];
        try (InputStream in = from.getInputStream(); OutputStream out = to.getOutputStream()) {
            int n;
            while ((n = in.read(buf)) >= 0) {
                out.write(buf, 0, n);
            }
        } catch (IOException e) {
            // closed by a switch or by either end
        } finally {
            closeQuietly(from);
            closeQuietly(to);
            open.remove(from);
            open.remove(to);
        }
    }

    private static void closeQuietly(Socket s) {
        try {
            s.close();
        } catch (IOException e) {
            // already closed
        }
    }

    @Override
    public void close() {
        try {
            server.close();
        } catch (IOException e) {
            // already closed
        }
        switchTo(target);
    }
}
