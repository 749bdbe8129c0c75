package dev.kvpool.bench;

import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.List;

/**
 * A minimal pipelining-free RESP2 client for the Redis baseline: one socket, one command at a time, replies
 * fully parsed (bulk strings become byte arrays) so the baseline pays for decoding as the KVPool client does.
 */
final class Resp implements AutoCloseable {
    private final Socket socket;
    private final OutputStream out;
    private final InputStream in;

    Resp(String host, int port) throws IOException {
        socket = new Socket(host, port);
        socket.setTcpNoDelay(true);
        out = new BufferedOutputStream(socket.getOutputStream(), 1 << 16);
        in = new BufferedInputStream(socket.getInputStream(), 1 << 16);
    }

    Object call(byte[]... args) throws IOException {
        write(args);
        out.flush();
        return read();
    }

    /** Sends every command before reading any reply: one round trip for the lot (a Redis pipeline). */
    Object[] pipeline(List<byte[][]> commands) throws IOException {
        for (byte[][] c : commands) {
            write(c);
        }
        out.flush();
        Object[] replies = new Object[commands.size()];
        for (int i = 0; i < replies.length; i++) {
            replies[i] = read();
        }
        return replies;
    }

    private void write(byte[]... args) throws IOException {
        out.write(('*' + Integer.toString(args.length) + "\r\n").getBytes(StandardCharsets.US_ASCII));
        for (byte[] a : args) {
            out.write(('$' + Integer.toString(a.length) + "\r\n").getBytes(StandardCharsets.US_ASCII));
            out.write(a);
            out.write('\r');
            out.write('\n');
        }
    }

    Object call(String... args) throws IOException {
        byte[][] b = new byte[args.length][];
        for (int i = 0; i < args.length; i++) {
            b[i] = args[i].getBytes(StandardCharsets.UTF_8);
        }
        return call(b);
    }

    private String line() throws IOException {
        StringBuilder sb = new StringBuilder();
        int c;
        while ((c = in.read()) != '\r') {
            if (c < 0) {
                throw new IOException("redis closed the connection");
            }
            sb.append((char) c);
        }
        in.read(); // \n
        return sb.toString();
    }

    private Object read() throws IOException {
        int type = in.read();
        String l = line();
        return switch (type) {
            case '+' -> l;
            case '-' -> throw new IOException("redis error: " + l);
            case ':' -> Long.parseLong(l);
            case '$' -> {
                int n = Integer.parseInt(l);
                if (n < 0) {
                    yield null;
                }
                byte[] b = in.readNBytes(n);
                in.read();
                in.read();
                yield b;
            }
            case '*' -> {
                int n = Integer.parseInt(l);
                Object[] a = new Object[Math.max(n, 0)];
                for (int i = 0; i < n; i++) {
                    a[i] = read();
                }
                yield a;
            }
            default -> throw new IOException("unexpected RESP type " + (char) type);
        };
    }

    @Override
    public void close() throws IOException {
        socket.close();
    }
}
