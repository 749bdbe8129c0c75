package dev.kvpool.control.metaproxy;

import dev.kvpool.control.services.ServicesService;
import io.quarkus.arc.DefaultBean;
import jakarta.inject.Inject;
import java.time.Instant;
import java.util.Optional;
import jakarta.enterprise.context.ApplicationScoped;
import org.eclipse.microprofile.config.inject.ConfigProperty;

/**
 * {@code kvpool.control.metadata-plane.url} (env {@code KVPOOL_METADATA_PLANE_URL}) when it is set: the operator named
 * the address this control plane reaches the metadata plane at. Otherwise the URL the leading replica reports with its
 * stats (what-if jobs live on the replica that runs them, so the console keeps talking to one), and
 * {@code http://127.0.0.1:6382} while none reports.
 */
@ApplicationScoped
@DefaultBean
public class ConfiguredMetaPlaneTarget implements MetaPlaneTarget {
    static final String LOCAL = "http://127.0.0.1:6382";
    @ConfigProperty(name = "kvpool.control.metadata-plane.url")
    Optional<String> configured;
    @Inject
    ServicesService services;

    @Override
    public String url() {
        if (configured.isPresent() && !configured.get().isBlank()) {
            return configured.get();
        }
        String reported = services.reportingMetaUrl(Instant.now());
        return reported != null ? reported : LOCAL;
    }
}
