package dev.kvpool.meta.store.embedded;

import dev.kvpool.meta.backend.BackendContext;
import dev.kvpool.meta.backend.BackendProvider;
import dev.kvpool.meta.backend.MetaBackend;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.inject.Inject;

/** {@code kvpool.meta.store=embedded}: the index in this process, under the data directory. */
@ApplicationScoped
public class EmbeddedBackendProvider implements BackendProvider {
    @Inject
    EmbeddedSettings settings;

    @Override
    public String kind() {
        return "embedded";
    }

    @Override
    public String describe() {
        return settings.persist() ? "embedded (snapshot + journal under the data directory)" : "embedded, memory only";
    }

    @Override
    public MetaBackend open(BackendContext context) {
        return new EmbeddedBackend(settings, context);
    }
}
