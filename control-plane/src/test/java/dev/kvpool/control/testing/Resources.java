package dev.kvpool.control.testing;

import io.quarkus.test.common.QuarkusTestResource;

/** The real services every test class shares (one application start for the whole suite). */
@QuarkusTestResource(PostgresResource.class)
@QuarkusTestResource(KafkaResource.class)
public final class Resources {
    private Resources() {
    }
}
