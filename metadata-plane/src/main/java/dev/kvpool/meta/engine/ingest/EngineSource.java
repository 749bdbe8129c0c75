package dev.kvpool.meta.engine.ingest;

import dev.kvpool.api.naming.Identifiers;
import java.net.URI;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;

/**
 * One engine KV-event publisher KVPool subscribes to (a vLLM / SGLang pod, or one DP rank of it): KVPool connects a
 * SUB socket to {@code endpoint} and, on a sequence gap, a DEALER to {@code replayEndpoint}.
 *
 * @param name          the source's own name (an identifier; shown as a pod's "source")
 * @param instanceId    the KVPool instance (model) its blocks belong to
 * @param pod           the pod id; null: from an llm-d topic {@code kv@<pod>@<model>}, else the endpoint's host:port
 * @param endpoint      {@code tcp://host:port} of the engine's PUB socket
 * @param replayEndpoint {@code tcp://host:port} of the engine's ROUTER replay socket, or null (gaps then make the pod
 *                      "uncertain")
 * @param topic         SUB prefix filter ("" = every topic)
 * @param tierAliases   medium → tier (e.g. {@code CPU_TIER1 → cpu}); other media are lower-cased, a null one is gpu
 */
public record EngineSource(String name, String instanceId, String pod, String endpoint, String replayEndpoint,
                           String topic, Map<String, String> tierAliases) {
    public static final int MAX_SOURCES = 1024;
    public static final int MAX_ALIASES = 64;
    public static final int MAX_TOPIC = 256;
    /** Pod ids come from config, REST and engine topics: bounded, printable, no spaces or '@'. */
    public static final int MAX_POD = 256;

    public EngineSource {
        topic = topic == null ? "" : topic;
        if (tierAliases != null && tierAliases.entrySet().stream().anyMatch(e -> e.getKey() == null
                || e.getValue() == null)) {
            throw new IllegalArgumentException("tier_aliases: a medium or a tier is null");
        }
        tierAliases = tierAliases == null ? Map.of() : Map.copyOf(new TreeMap<>(tierAliases));
        String p = problem(name, instanceId, pod, endpoint, replayEndpoint, topic, tierAliases);
        if (p != null) {
            throw new IllegalArgumentException(p);
        }
    }

    static String problem(String name, String instanceId, String pod, String endpoint, String replayEndpoint,
                          String topic, Map<String, String> aliases) {
        String p = Identifiers.problem(Identifiers.Kind.AGENT, name);
        if (p != null) {
            return "name: " + p;
        }
        p = Identifiers.problem(Identifiers.Kind.INSTANCE, instanceId);
        if (p != null) {
            return "instance_id: " + p;
        }
        if (pod != null && (p = podProblem(pod)) != null) {
            return "pod: " + p;
        }
        if ((p = endpointProblem(endpoint)) != null) {
            return "endpoint: " + p;
        }
        if (replayEndpoint != null && (p = endpointProblem(replayEndpoint)) != null) {
            return "replay_endpoint: " + p;
        }
        if (topic.length() > MAX_TOPIC) {
            return "topic: must be at most " + MAX_TOPIC + " characters, got " + topic.length();
        }
        for (int i = 0; i < topic.length(); i++) {
            if (topic.charAt(i) < 0x20 || topic.charAt(i) > 0x7e) {
                return "topic: must hold only printable ASCII; character " + i + " is not";
            }
        }
        if (aliases.size() > MAX_ALIASES) {
            return "tier_aliases: at most " + MAX_ALIASES + " entries, got " + aliases.size();
        }
        for (Map.Entry<String, String> e : aliases.entrySet()) {
            if ((p = tierProblem(e.getKey())) != null) {
                return "tier_aliases: medium '" + e.getKey() + "' " + p;
            }
            if ((p = tierProblem(e.getValue())) != null) {
                return "tier_aliases." + e.getKey() + ": " + p;
            }
        }
        return null;
    }

    /** Null when {@code pod} is a usable pod id (1..256 of {@code A-Za-z0-9 . _ - : / [ ]}), else why not. */
    public static String podProblem(String pod) {
        if (pod == null || pod.isEmpty()) {
            return "must not be empty";
        }
        if (pod.length() > MAX_POD) {
            return "must be at most " + MAX_POD + " characters, got " + pod.length();
        }
        for (int i = 0; i < pod.length(); i++) {
            char c = pod.charAt(i);
            boolean ok = c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || ".-_:/[]".indexOf(c) >= 0;
            if (!ok) {
                return "must hold only letters, digits and . _ - : / [ ]; character " + i + " is not";
            }
        }
        return null;
    }

    /** Null when {@code tier} is a usable tier name (1..64 of letters, digits, '_', '-', '.'). */
    public static String tierProblem(String tier) {
        if (tier == null || tier.isEmpty()) {
            return "must not be empty";
        }
        if (tier.length() > 64) {
            return "must be at most 64 characters";
        }
        for (int i = 0; i < tier.length(); i++) {
            char c = tier.charAt(i);
            if (!(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || "_-.".indexOf(c) >= 0)) {
                return "must hold only letters, digits, '_', '-' and '.'";
            }
        }
        return null;
    }

    /** Null when {@code e} is {@code tcp://host:port} (a host name, IPv4 or [IPv6]; port 1..65535). */
    public static String endpointProblem(String e) {
        if (e == null || e.isEmpty()) {
            return "is required";
        }
        if (e.length() > 300) {
            return "must be at most 300 characters";
        }
        if (!e.startsWith("tcp://")) {
            return "must be tcp://host:port (KVPool connects to the engine; ipc:// and inproc:// are local to it)";
        }
        try {
            URI u = new URI(e);
            if (u.getHost() == null || u.getPort() < 1 || u.getPort() > 65535 || u.getRawPath() != null
                    && !u.getRawPath().isEmpty() || u.getRawQuery() != null || u.getRawFragment() != null
                    || u.getRawUserInfo() != null) {
                return "must be tcp://host:port with a host and a port 1..65535, nothing else; got '" + printable(e) + "'";
            }
            if (u.getHost().equals("*")) {
                return "must name the engine's host (a '*' is for binding)";
            }
        } catch (java.net.URISyntaxException ex) {
            return "is not tcp://host:port: " + ex.getReason();
        }
        return null;
    }

    private static String printable(String s) {
        StringBuilder b = new StringBuilder();
        s.codePoints().limit(100).forEach(c -> b.append(c >= 0x20 && c < 0x7f ? (char) c : '?'));
        return b.toString();
    }

    /** host:port of the endpoint (the default pod id). */
    String endpointHostPort() {
        URI u = URI.create(endpoint);
        return u.getHost() + ":" + u.getPort();
    }

    /** The pod of a live frame's topic: the configured one, else llm-d's {@code kv@<pod>@<model>}, else host:port. */
    String podOf(String topicFrame) {
        if (pod != null) {
            return pod;
        }
        String fromTopic = podOfTopic(topicFrame);
        return fromTopic != null ? fromTopic : endpointHostPort();
    }

    /** The pod of an llm-d topic {@code kv@<pod>@<model>}, or null when it is not one or the pod is not usable. */
    static String podOfTopic(String topic) {
        if (topic == null || !topic.startsWith("kv@")) {
            return null;
        }
        int end = topic.indexOf('@', 3);
        String p = end < 0 ? null : topic.substring(3, end);
        return p != null && podProblem(p) == null ? p : null;
    }

    /** The tier of an event's medium: an alias, else lower-cased; null → gpu. */
    public String tierOf(String medium) {
        return tierOf(tierAliases, medium);
    }

    public static String tierOf(Map<String, String> aliases, String medium) {
        if (medium == null || medium.isEmpty()) {
            return "gpu";
        }
        String a = aliases.get(medium);
        return a != null ? a.toLowerCase(Locale.ROOT) : medium.toLowerCase(Locale.ROOT);
    }
}
