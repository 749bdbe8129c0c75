package dev.kvpool.bench;

import com.google.protobuf.Message;
import dev.kvpool.api.json.ProtoJson;
import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.Locale;

/**
 * The bench's KVCM caller: one blocking keep-alive HTTP/1.1 connection, as lean as the RESP client of the Redis
 * baseline (the JDK HttpClient's async hand-offs cost more than the server on a 2-core box), with the request
 * and response going through the project's JSON codec as a real client's would.
 */
final class KvcmHttp implements AutoCloseable {
    private final String host;
    private final int port;
    private Socket socket;
    private OutputStream out;
    private InputStream in;

    KvcmHttp(String base) {
        URI u = URI.create(base);
        this.host = u.getHost();
        this.port = u.getPort() < 0 ? 80 : u.getPort();
    }

    private void connect() throws IOException {
        socket = new Socket(host, port);
        socket.setTcpNoDelay(true);
        out = new BufferedOutputStream(socket.getOutputStream(), 1 << 16);
        in = new BufferedInputStream(socket.getInputStream(), 1 << 16);
    }

    <B extends Message.Builder> B call(String rpc, Message request, B response) throws IOException {
        byte[] body = post("/api/" + rpc, ProtoJson.print(request));
        return ProtoJson.merge(body, response);
    }

    byte[] post(String path, byte[] body) throws IOException {
        return post(path, body, true);
    }

    /** {@code okOnly} false: any status is read as an answer (the HTTP floor: a 404 of an unknown RPC). */
    byte[] post(String path, byte[] body, boolean okOnly) throws IOException {
        if (socket == null) {
            connect();
        }
        String head = "POST " + path + " HTTP/1.1\r\nHost: " + host + ":" + port
                + "\r\nContent-Type: application/json\r\nContent-Length: " + body.length + "\r\n\r\n";
        out.write(head.getBytes(StandardCharsets.US_ASCII));
        out.write(body);
        out.flush();
        String status = line();
        if (okOnly && !status.startsWith("HTTP/1.1 200")) {
            throw new IOException(path + " answered " + status);
        }
        int length = -1;
        boolean chunked = false;
        for (String h = line(); !h.isEmpty(); h = line()) {
            String l = h.toLowerCase(Locale.ROOT);
            if (l.startsWith("content-length:")) {
                length = Integer.parseInt(l.substring(15).trim());
            } else if (l.startsWith("transfer-encoding:") && l.contains("chunked")) {
                chunked = true;
            }
        }
        if (!chunked) {
            return in.readNBytes(length);
        }
        var all = new java.io.ByteArrayOutputStream();
        for (int n = Integer.parseInt(line().trim(), 16); n > 0; n = Integer.parseInt(line().trim(), 16)) {
            all.write(in.readNBytes(n));
            line();
        }
        line();
        return all.toByteArray();
    }

    private String line() throws IOException {
        StringBuilder sb = new StringBuilder();
        int c;
        while ((c = in.read()) != '\n') {
            if (c < 0) {
                throw new IOException("connection closed");
            }
            if (c != '\r') {
                sb.append((char) c);
            }
        }
        return sb.toString();
    }

    @Override
    public void close() throws IOException {
        if (socket != null) {
            socket.close();
        }
    }
}
