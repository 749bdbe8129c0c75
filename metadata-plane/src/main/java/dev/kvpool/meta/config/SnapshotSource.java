package dev.kvpool.meta.config;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.kvpool.api.client.ControlPlaneClient;
import dev.kvpool.meta.index.IndexStore;
import dev.kvpool.meta.retry.Backoff;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import org.jboss.logging.Logger;

/**
 * Snapshot loading: the control plane's configuration snapshot ({@code GET /api/v1/config/snapshot}), and the copy
 * of the last applied configuration kept in the index store's records (so a restart while the control plane is
 * down serves with it).
 *
 * <p>Why {@link ControlPlaneClient} and not the Quarkus REST client: the REST client extension
 * (quarkus-rest-client) is not among the dependencies that resolve here, and the client is shared with the data
 * agent and the operator through the api module: a token login renewed before expiry, problem+json details, and
 * the same timeouts for every caller, none of which is a CDI bean.
 */
final class SnapshotSource {
    private static final Logger LOG = Logger.getLogger(ControlPlaneSync.class); // the sync's log, as before the split
    static final String RECORDS = "control-plane", SNAPSHOT = "snapshot";
    /** The waits for a control plane that is unreachable at start-up, with no persisted configuration to use. */
    static final Backoff START_UP = new Backoff(500, 15_000);

    private final ControlPlaneClient client;
    private final IndexStore store;

    SnapshotSource(ControlPlaneClient client, IndexStore store) {
        this.client = client;
        this.store = store;
    }

    /** The control plane's snapshot now. */
    JsonNode fetch() throws IOException {
        ControlPlaneClient.Reply r = client.get("/api/v1/config/snapshot");
        if (!r.ok()) {
            throw new IOException("GET /api/v1/config/snapshot answered HTTP " + r.status() + ": " + r.detail());
        }
        if (!r.body().has("position")) {
            throw new IOException("GET /api/v1/config/snapshot: no position in " + r.body());
        }
        return r.body();
    }

    /**
     * The control plane's snapshot, waited for with backoff while it cannot be reached; when {@code fallback} (a
     * persisted configuration) exists, the first failure is thrown instead: the caller serves with that one.
     */
    JsonNode fetchAtStart(boolean fallback) throws IOException {
        long backoff = 0;
        for (int attempt = 1; ; attempt++) {
            try {
                return fetch();
            } catch (IOException | RuntimeException e) {
                if (fallback) {
                    throw e;
                }
                backoff = START_UP.after(backoff);
                LOG.errorf("control plane %s unreachable and no configuration received yet (attempt %d: %s); the "
                        + "metadata plane waits for it, retrying in %d ms", client.url, attempt, e.toString(), backoff);
                try {
                    Thread.sleep(backoff);
                } catch (InterruptedException ie) {
                    Thread.currentThread().interrupt();
                    throw new IllegalStateException("interrupted while waiting for the control plane", ie);
                }
            }
        }
    }

    /** The configuration the previous run persisted, as stored (null: none). */
    byte[] saved() {
        return store.records(RECORDS).get(SNAPSHOT);
    }

    static JsonNode parse(byte[] saved) throws IOException {
        return ControlPlaneClient.JSON.readTree(saved);
    }

    /** Keeps {@code doc} as the configuration to serve with after a restart; a failure is only logged. */
    void persist(ObjectNode doc) {
        try {
            store.putRecord(RECORDS, SNAPSHOT, doc.toString().getBytes(StandardCharsets.UTF_8));
        } catch (RuntimeException e) {
            LOG.warnf("could not persist the control-plane configuration: %s", e.toString());
        }
    }
}
