package dev.kvpool.api.json;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.quarkus.jackson.ObjectMapperCustomizer;
import jakarta.inject.Singleton;

/**
 * Every service's REST bodies are read strictly ({@link BodyErrors#strict}, unknown fields refused): a bean here,
 * found through this module's index, so the three services share one. Inputs that echo read-only fields of their
 * GET ignore them by name ({@code @JsonIgnoreProperties}).
 */
@Singleton
public class StrictJson implements ObjectMapperCustomizer {
    @Override
    public void customize(ObjectMapper mapper) {
        BodyErrors.strict(mapper, true);
    }
}
