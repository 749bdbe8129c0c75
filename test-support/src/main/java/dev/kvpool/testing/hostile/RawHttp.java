package dev.kvpool.testing.hostile;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;

/**
 * HTTP/1.1 over a plain socket, for what a well-behaved client library cannot send: bad chunked framing, a
 * Content-Length that lies, a body that never finishes, raw bytes in a header. It tells the three ways an exchange
 * can end apart: answered, closed without an answer, or still silent when the deadline passed (a hang).
 */
public final class RawHttp {
    private RawHttp() {
    }

    public enum Outcome { ANSWERED, CLOSED_WITHOUT_ANSWER, TIMED_OUT }

    /** What came back; {@code status} is -1 unless answered. Header names are lower-case. */
    public record Reply(Outcome outcome, int status, Map<String, String> headers, String body, long millis) {
        public String header(String name) {
            return headers.get(name.toLowerCase(Locale.ROOT));
        }

        @Override
        public String toString() {
            return outcome == Outcome.ANSWERED
                    ? status + " " + headers + " " + (body.length() > 300 ? body.substring(0, 300) + "..." : body)
                    : outcome + " after " + millis + " ms";
        }
    }

    /** A request head: {@code METHOD path HTTP/1.1}, Host, Connection: close, then {@code extraHeaders} lines. */
    public static byte[] head(String method, String path, String host, String... extraHeaders) {
        StringBuilder sb = new StringBuilder(method).append(' ').append(path).append(" HTTP/1.1\r\nHost: ")
                .append(host).append("\r\nConnection: close\r\n");
        for (String h : extraHeaders) {
            sb.append(h).append("\r\n");
        }
        return sb.append("\r\n").toString().getBytes(StandardCharsets.ISO_8859_1);
    }

    /** A POST with a correct Content-Length. */
    public static byte[] post(String path, String host, String contentType, byte[] body, String... extraHeaders) {
        String[] hs = new String[extraHeaders.length + 2];
        hs[0] = "Content-Type: " + contentType;
        hs[1] = "Content-Length: " + body.length;
        System.arraycopy(extraHeaders, 0, hs, 2, extraHeaders.length);
        return concat(head("POST", path, host, hs), body);
    }

    public static byte[] concat(byte[]... parts) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        for (byte[] p : parts) {
            out.writeBytes(p);
        }
        return out.toByteArray();
    }

    public static byte[] ascii(String s) {
        return s.getBytes(StandardCharsets.ISO_8859_1);
    }

    /**
     * Sends {@code request} whole, then reads one reply until it is complete, the server closes, or {@code timeout}
     * passes. The sending side stays open, as a real client's does: Netty closes a connection whose peer half-closed
     * it, so a half-close here would lose answers a real client gets.
     */
    public static Reply exchange(String host, int port, byte[] request, Duration timeout) throws IOException {
        try (Connection c = open(host, port, timeout)) {
            try {
                c.send(request);
            } catch (IOException closedEarly) {
                // the server answered (a 413, a 400) and closed before it took the whole request: read that answer
            }
            return c.read(timeout);
        }
    }

    public static Connection open(String host, int port, Duration timeout) throws IOException {
        Socket s = new Socket();
        s.connect(new InetSocketAddress(host, port), (int) Math.min(Integer.MAX_VALUE, timeout.toMillis()));
        return new Connection(s);
    }

    /** One connection, for sending a request in pieces (slow bodies, a body that never ends). */
    public static final class Connection implements AutoCloseable {
        private final Socket socket;

        Connection(Socket socket) {
            this.socket = socket;
        }

        public void send(byte[] bytes) throws IOException {
            OutputStream out = socket.getOutputStream();
            out.write(bytes);
            out.flush();
        }

        public void shutdownOutput() {
            try {
                socket.shutdownOutput();
            } catch (IOException ignored) {
                // the server closed first: what it sent is still readable
            }
        }

        /** Reads one reply (status line, headers, body by Content-Length, chunks or until close). */
        public Reply read(Duration timeout) throws IOException {
            long start = System.nanoTime();
            long deadline = start + timeout.toNanos();
            ByteArrayOutputStream got = new ByteArrayOutputStream();
            InputStream in = socket.getInputStream();
            byte[] buf = new byte[8192];
            while (true) {
                long left = (deadline - System.nanoTime()) / 1_000_000;
                if (left <= 0) {
                    return silent(got, start);
                }
                socket.setSoTimeout((int) Math.max(1, left));
                int n;
                try {
                    n = in.read(buf);
                } catch (SocketTimeoutException e) {
                    return silent(got, start);
                } catch (IOException e) { // reset by the server
                    n = -1;
                }
                if (n < 0) {
                    Reply r = parse(got.toByteArray(), true, start);
                    return r != null ? r : new Reply(Outcome.CLOSED_WITHOUT_ANSWER, -1, Map.of(), "", ms(start));
                }
                got.write(buf, 0, n);
                Reply r = parse(got.toByteArray(), false, start);
                if (r != null) {
                    return r;
                }
            }
        }

        private static Reply silent(ByteArrayOutputStream got, long start) {
            Reply r = parse(got.toByteArray(), true, start); // a reply whose end is not marked, cut by the deadline
            return r != null && r.status() > 0 ? r : new Reply(Outcome.TIMED_OUT, -1, Map.of(), "", ms(start));
        }

        @Override
        public void close() throws IOException {
            socket.close();
        }
    }

    private static long ms(long start) {
        return (System.nanoTime() - start) / 1_000_000;
    }

    /** A complete reply in {@code b}, or null when more bytes are needed ({@code closed}: no more will come). */
    static Reply parse(byte[] b, boolean closed, long start) {
        String all = new String(b, StandardCharsets.ISO_8859_1);
        int end = all.indexOf("\r\n\r\n");
        if (end < 0) {
            return null;
        }
        String[] lines = all.substring(0, end).split("\r\n");
        String[] status = lines[0].split(" ", 3);
        if (status.length < 2 || !status[0].startsWith("HTTP/")) {
            return null;
        }
        int code;
        try {
            code = Integer.parseInt(status[1]);
        } catch (NumberFormatException e) {
            return null;
        }
        Map<String, String> headers = new TreeMap<>();
        for (int i = 1; i < lines.length; i++) {
            int colon = lines[i].indexOf(':');
            if (colon > 0) {
                headers.put(lines[i].substring(0, colon).trim().toLowerCase(Locale.ROOT), lines[i].substring(colon + 1).trim());
            }
        }
        byte[] rest = java.util.Arrays.copyOfRange(b, end + 4, b.length);
        String body;
        if (headers.containsKey("content-length")) {
            int len = Integer.parseInt(headers.get("content-length"));
            if (rest.length < len && !closed) {
                return null;
            }
            body = new String(rest, 0, Math.min(len, rest.length), StandardCharsets.UTF_8);
        } else if ("chunked".equalsIgnoreCase(headers.get("transfer-encoding"))) {
            String chunked = dechunk(rest);
            if (chunked == null && !closed) {
                return null;
            }
            body = chunked == null ? new String(rest, StandardCharsets.UTF_8) : chunked;
        } else if (code == 204 || code == 304 || code / 100 == 1) {
            body = "";
        } else {
            if (!closed) {
                return null;
            }
            body = new String(rest, StandardCharsets.UTF_8);
        }
        return new Reply(Outcome.ANSWERED, code, headers, body, ms(start));
    }

    private static String dechunk(byte[] rest) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        int i = 0;
        while (true) {
            int nl = indexOf(rest, i);
            if (nl < 0) {
                return null;
            }
            String sizeLine = new String(rest, i, nl - i, StandardCharsets.ISO_8859_1);
            int semi = sizeLine.indexOf(';');
            int size = Integer.parseInt((semi < 0 ? sizeLine : sizeLine.substring(0, semi)).trim(), 16);
            i = nl + 2;
            if (size == 0) {
                return out.toString(StandardCharsets.UTF_8);
            }
            if (i + size + 2 > rest.length) {
                return null;
            }
            out.write(rest, i, size);
            i += size + 2;
        }
    }

    private static int indexOf(byte[] b, int from) {
        for (int i = from; i + 1 < b.length; i++) {
            if (b[i] == '\r' && b[i + 1] == '\n') {
                return i;
            }
        }
        return -1;
    }

    /**
     * Requests whose framing is wrong, each on its own, for {@code POST path}: a server must answer each with a
     * 4xx, never hang or answer 5xx. (A body that stops short of its Content-Length is a slow body, not a framing
     * error: {@link #stalled}.)
     */
    public static Map<String, byte[]> badFraming(String path, String host, String contentType) {
        Map<String, byte[]> m = new java.util.LinkedHashMap<>();
        String ct = "Content-Type: " + contentType;
        m.put("chunk size not hex", concat(head("POST", path, host, ct, "Transfer-Encoding: chunked"),
                ascii("zz\r\n{}\r\n0\r\n\r\n")));
        m.put("chunk longer than its size", concat(head("POST", path, host, ct, "Transfer-Encoding: chunked"),
                ascii("2\r\n{}xxxxxxxx\r\n0\r\n\r\n")));
        m.put("chunk size overflowing", concat(head("POST", path, host, ct, "Transfer-Encoding: chunked"),
                ascii("fffffffffffffffffff\r\n{}\r\n0\r\n\r\n")));
        m.put("negative chunk size", concat(head("POST", path, host, ct, "Transfer-Encoding: chunked"),
                ascii("-2\r\n{}\r\n0\r\n\r\n")));
        m.put("Content-Length not a number", concat(head("POST", path, host, ct, "Content-Length: abc"), ascii("{}")));
        m.put("Content-Length negative", concat(head("POST", path, host, ct, "Content-Length: -5"), ascii("{}")));
        m.put("Content-Length beyond a long", concat(head("POST", path, host, ct,
                "Content-Length: 99999999999999999999999"), ascii("{}")));
        m.put("two different Content-Lengths", concat(head("POST", path, host, ct, "Content-Length: 2",
                "Content-Length: 5"), ascii("{}")));
        m.put("Content-Length and chunked", concat(head("POST", path, host, ct, "Content-Length: 2",
                "Transfer-Encoding: chunked"), ascii("2\r\n{}\r\n0\r\n\r\n")));
        m.put("unknown transfer coding", concat(head("POST", path, host, ct, "Transfer-Encoding: gzip, chunked"),
                ascii("2\r\n{}\r\n0\r\n\r\n")));
        m.put("NUL in a header value", concat(head("POST", path, host, ct, "X-Trace: a\u0000b", "Content-Length: 2"),
                ascii("{}")));
        m.put("header without a colon", concat(head("POST", path, host, ct, "Broken header line", "Content-Length: 2"),
                ascii("{}")));
        return m;
    }

    /** A request whose body stops after {@code sent} of the {@code declared} bytes and never goes on. */
    public static byte[] stalled(String path, String host, int declared, int sent) {
        byte[] body = new byte[sent];
        java.util.Arrays.fill(body, (byte) ' ');
        return concat(head("POST", path, host, "Content-Type: application/json", "Content-Length: " + declared), body);
    }

    /** Used heap after a full collection, for "did that allocate what it was told to" checks in-process. */
    public static long usedHeapAfterGc() {
        var mem = java.lang.management.ManagementFactory.getMemoryMXBean();
        long best = Long.MAX_VALUE;
        for (int i = 0; i < 3; i++) {
            System.gc();
            best = Math.min(best, mem.getHeapMemoryUsage().getUsed());
        }
        return best;
    }
}
