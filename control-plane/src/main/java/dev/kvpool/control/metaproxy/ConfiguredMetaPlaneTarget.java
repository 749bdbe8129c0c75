package dev.kvpool.control.metaproxy;

import io.quarkus.arc.DefaultBean;
import jakarta.enterprise.context.ApplicationScoped;
import org.eclipse.microprofile.config.inject.ConfigProperty;

/** {@code kvpool.control.metadata-plane.url} (env {@code KVPOOL_METADATA_PLANE_URL}), default http://127.0.0.1:6382. */
@ApplicationScoped
@DefaultBean
public class ConfiguredMetaPlaneTarget implements MetaPlaneTarget {
    @ConfigProperty(name = "kvpool.control.metadata-plane.url", defaultValue = "http://127.0.0.1:6382")
    String url;

    @Override
    public String url() {
        return url;
    }
}
