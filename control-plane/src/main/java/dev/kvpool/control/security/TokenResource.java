package dev.kvpool.control.security;

import dev.kvpool.api.auth.BearerToken;
import dev.kvpool.control.account.AccountEntity;
import dev.kvpool.control.account.AccountService;
import dev.kvpool.control.common.ProblemMappers;
import jakarta.annotation.security.PermitAll;
import jakarta.inject.Inject;
import jakarta.ws.rs.Consumes;
import jakarta.ws.rs.GET;
import jakarta.ws.rs.POST;
import jakarta.ws.rs.Path;
import jakarta.ws.rs.Produces;
import jakarta.ws.rs.core.MediaType;
import jakarta.ws.rs.core.Response;
import java.time.Duration;
import java.time.Instant;
import java.util.Set;
import java.util.TreeSet;
import org.eclipse.microprofile.config.inject.ConfigProperty;
import org.eclipse.microprofile.openapi.annotations.Operation;
import org.eclipse.microprofile.openapi.annotations.media.Schema;
import org.eclipse.microprofile.openapi.annotations.tags.Tag;

@Path("/api/v1")
@Produces(MediaType.APPLICATION_JSON)
@Consumes(MediaType.APPLICATION_JSON)
@Tag(name = "auth", description = "Bearer tokens and the key that verifies them")
public class TokenResource {
    @Inject
    AccountService accounts;
    @Inject
    SigningKeys keys;
    @ConfigProperty(name = "kvpool.control.token-ttl", defaultValue = "PT1H")
    Duration ttl;

    @Schema(name = "TokenRequest", example = "{\"user\": \"admin\", \"password\": \"Admin-Passw0rd!\"}")
    public record TokenRequest(String user, String password) {
    }

    public record TokenResponse(String token, String tokenType, Instant expiresAt, String role, Set<String> groups) {
    }

    public record PublicKeyResponse(String algorithm, String format, String key) {
    }

    @POST
    @Path("tokens")
    @PermitAll
    @Operation(summary = "Issue a bearer token for a user name and password",
            description = "Send it as Authorization: Bearer <token>. Claims {sub, role, groups, exp, jti}, Ed25519-signed.")
    public Response issue(TokenRequest r) {
        if (r == null || r.user() == null || r.user().isBlank()) {
            return ProblemMappers.problem(400, "Invalid request", "user is required", "user");
        }
        if (r.password() == null) {
            return ProblemMappers.problem(400, "Invalid request", "password is required", "password");
        }
        AccountEntity a = accounts.authenticate(r.user(), r.password()).orElse(null);
        if (a == null) {
            return ProblemMappers.problem(401, "Unauthorized", "wrong user name or password", null);
        }
        Instant exp = Instant.now().plus(ttl);
        Set<String> groups = new TreeSet<>(a.groups);
        String token = BearerToken.issue(keys.privateKey(), a.name, a.role, groups, exp);
        return Response.ok(new TokenResponse(token, "Bearer", exp, a.role, groups)).build();
    }

    @GET
    @Path("auth/public-key")
    @PermitAll
    @Operation(summary = "The Ed25519 public key that verifies bearer tokens (base64 X.509 SubjectPublicKeyInfo)",
            description = "The metadata plane fetches it once and verifies tokens offline with dev.kvpool.api.auth.BearerToken.")
    public PublicKeyResponse publicKey() {
        return new PublicKeyResponse("Ed25519", "X.509", BearerToken.encodePublicKey(keys.publicKey()));
    }
}
