package dev.kvpool.control.common;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.kvpool.api.json.BodyErrors;
import io.quarkus.jackson.ObjectMapperCustomizer;
import jakarta.inject.Singleton;

/**
 * REST bodies are read strictly (BodyErrors.strict): a misspelt field is a 400 naming it. The inputs ignore the
 * read-only fields their GET returns ({@code version}, {@code createdAt}, ...), so GET, edit, PUT works.
 */
@Singleton
public class StrictJson implements ObjectMapperCustomizer {
    @Override
    public void customize(ObjectMapper mapper) {
        BodyErrors.strict(mapper, true);
    }
}
