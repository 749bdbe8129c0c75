package dev.kvpool.meta.engine.ingest;

import static dev.kvpool.meta.rest.BlockKeysResource.problem;

import jakarta.inject.Inject;
import jakarta.ws.rs.Consumes;
import jakarta.ws.rs.DELETE;
import jakarta.ws.rs.GET;
import jakarta.ws.rs.POST;
import jakarta.ws.rs.Path;
import jakarta.ws.rs.PathParam;
import jakarta.ws.rs.Produces;
import jakarta.ws.rs.core.MediaType;
import jakarta.ws.rs.core.Response;
import java.util.List;
import java.util.Map;
import org.eclipse.microprofile.openapi.annotations.Operation;
import org.eclipse.microprofile.openapi.annotations.tags.Tag;

/** The engine KV-event sources KVPool subscribes to (admin / operator tokens: RestAuthFilter). */
@Path("/api/v1/engine/sources")
@Produces(MediaType.APPLICATION_JSON)
@Tag(name = "engine", description = "vLLM / SGLang KV-event ingest and prefix scores")
public class EngineSourcesResource {

    @Inject
    EngineIngest ingest;

    public record SourceBody(String name, String instance_id, String pod, String endpoint, String replay_endpoint,
                             String topic, Map<String, String> tier_aliases) {
    }

    public record SourceView(String name, String instance_id, String pod, String endpoint, String replay_endpoint,
                             String topic, Map<String, String> tier_aliases, String origin) {
        static SourceView of(EngineIngest.Running r) {
            EngineSource s = r.source();
            return new SourceView(s.name(), s.instanceId(), s.pod(), s.endpoint(), s.replayEndpoint(), s.topic(),
                    s.tierAliases(), r.origin());
        }
    }

    @GET
    @Operation(summary = "List engine KV-event sources")
    public List<SourceView> list() {
        return ingest.sources().stream().map(SourceView::of).toList();
    }

    @POST
    @Consumes(MediaType.APPLICATION_JSON)
    @Operation(summary = "Subscribe to an engine's KV events (kept until the metadata plane restarts)")
    public Response add(SourceBody b) {
        if (b == null) {
            throw problem(400, "request body: a source object is required");
        }
        if (b.tier_aliases() != null && b.tier_aliases().size() > EngineSource.MAX_ALIASES) {
            throw problem(400, "tier_aliases: at most " + EngineSource.MAX_ALIASES + " entries, got "
                    + b.tier_aliases().size());
        }
        EngineSource s;
        try {
            s = new EngineSource(b.name(), b.instance_id(), b.pod(), b.endpoint(), b.replay_endpoint(), b.topic(),
                    b.tier_aliases());
        } catch (IllegalArgumentException e) {
            throw problem(400, e.getMessage());
        }
        return switch (ingest.add(s, "api")) {
            case ADDED -> Response.status(201).entity(SourceView.of(ingest.sources().stream()
                    .filter(r -> r.source().name().equals(s.name())).findFirst().orElseThrow())).build();
            case EXISTS -> throw problem(409, "source '" + s.name() + "' exists; delete it first");
            case TOO_MANY -> throw problem(409, "at most " + EngineSource.MAX_SOURCES + " sources");
            case DISABLED -> throw problem(409, "engine event ingest is off (kvpool.meta.engine-events.enabled=false)");
        };
    }

    @DELETE
    @Path("/{name}")
    @Operation(summary = "Stop a source; the blocks its pods reported leave the view")
    public Response delete(@PathParam("name") String name) {
        if (!ingest.remove(name)) {
            throw problem(404, "no source named '" + (name.length() > 128 ? name.substring(0, 128) + "..." : name)
                    + "'");
        }
        return Response.noContent().build();
    }
}
