package dev.kvpool.bench;

import java.io.IOException;
import java.util.Map;

/** A bench command's {@code --name value} options, with defaults; a value that does not parse names its option. */
final class Opts {
    private final Map<String, String> values;

    Opts(Map<String, String> values) {
        this.values = values;
    }

    String str(String name, String dflt) {
        return values.getOrDefault(name, dflt);
    }

    int integer(String name, int dflt) {
        String v = values.get(name);
        try {
            return v == null ? dflt : Integer.parseInt(v.trim());
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("--" + name + " must be an integer, got '" + v + "'");
        }
    }

    double number(String name, double dflt) {
        String v = values.get(name);
        try {
            return v == null ? dflt : Double.parseDouble(v.trim());
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("--" + name + " must be a number, got '" + v + "'");
        }
    }

    /** The metadata plane's HTTP address ({@code --url}). */
    String url() {
        return str("url", "http://127.0.0.1:6382");
    }

    /** The baseline Redis ({@code --redis host:port}). */
    String redisAddress() {
        return str("redis", "127.0.0.1:6379");
    }

    /** A new connection to the baseline Redis. */
    Resp redis() throws IOException {
        String a = redisAddress();
        int colon = a.lastIndexOf(':');
        if (colon <= 0) {
            throw new IllegalArgumentException("--redis must be host:port, got '" + a + "'");
        }
        int port;
        try {
            port = Integer.parseInt(a.substring(colon + 1));
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("--redis must be host:port, got '" + a + "'");
        }
        return new Resp(a.substring(0, colon), port);
    }
}
