package dev.kvpool.control.security;

import dev.kvpool.api.auth.BearerToken;
import dev.kvpool.api.auth.JwtTokens;
import dev.kvpool.control.account.AccountEntity;
import dev.kvpool.control.account.AccountService;
import dev.kvpool.control.common.ProblemMappers;
import io.quarkus.security.identity.SecurityIdentity;
import jakarta.annotation.security.PermitAll;
import jakarta.annotation.security.RolesAllowed;
import jakarta.inject.Inject;
import jakarta.ws.rs.Consumes;
import jakarta.ws.rs.GET;
import jakarta.ws.rs.POST;
import jakarta.ws.rs.Path;
import jakarta.ws.rs.Produces;
import jakarta.ws.rs.QueryParam;
import jakarta.ws.rs.core.MediaType;
import jakarta.ws.rs.core.Response;
import java.time.Duration;
import java.time.Instant;
import java.util.Set;
import java.util.TreeSet;
import java.util.UUID;
import org.eclipse.microprofile.config.inject.ConfigProperty;
import org.eclipse.microprofile.openapi.annotations.Operation;
import org.eclipse.microprofile.openapi.annotations.media.Schema;
import org.eclipse.microprofile.openapi.annotations.tags.Tag;

@Path("/api/v1")
@Produces(MediaType.APPLICATION_JSON)
@Consumes(MediaType.APPLICATION_JSON)
@Tag(name = "auth", description = "Bearer tokens (JWT), the keys that verify them, rotation and revocation")
public class TokenResource {
    @Inject
    AccountService accounts;
    @Inject
    SigningKeys keys;
    @Inject
    TokenRevocations revocations;
    @Inject
    SecurityIdentity identity;
    @ConfigProperty(name = "kvpool.control.token-ttl", defaultValue = "PT1H")
    Duration ttl;
    @ConfigProperty(name = "kvpool.control.token-issuer", defaultValue = "kvpool")
    String issuer;

    @Schema(name = "TokenRequest", example = "{\"user\": \"admin\", \"password\": \"Admin-Passw0rd!\"}")
    public record TokenRequest(String user, String password) {
    }

    public record TokenResponse(String token, String tokenType, Instant expiresAt, String role, Set<String> groups) {
    }

    public record PublicKeyResponse(String algorithm, String format, String key, String kid) {
    }

    public record RotateResponse(String kid, Instant created) {
    }

    @POST
    @Path("tokens")
    @PermitAll
    @Operation(summary = "Issue a bearer token for a user name and password",
            description = "Send it as Authorization: Bearer <token>. A JWT signed with EdDSA (Ed25519), header kid from "
                    + "GET /api/v1/auth/jwks; claims iss, sub, iat, exp, jti, role, groups.")
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
        Instant now = Instant.now();
        // not before the account's last cutoff (rounded up to a second), so a token issued just after a role change
        // is not refused as one from before it
        long iat = Math.max(now.getEpochSecond(), revocations.notBefore(a.name));
        Instant exp = Instant.ofEpochSecond(iat).plus(ttl);
        Set<String> groups = new TreeSet<>(a.groups);
        SigningKeys.Key k = keys.active();
        String token = JwtTokens.issue(k.privateKey(), k.kid(), issuer, new BearerToken.Claims(a.name, a.role, groups,
                iat, exp.getEpochSecond(), UUID.randomUUID().toString()));
        return Response.ok(new TokenResponse(token, "Bearer", exp, a.role, groups)).build();
    }

    @GET
    @Path("auth/jwks")
    @PermitAll
    @Operation(summary = "The JSON Web Key Set that verifies bearer tokens (RFC 7517; Ed25519 keys as OKP, RFC 8037)",
            description = "The active key and retired keys until every token they signed has expired. Also at "
                    + "/.well-known/jwks.json.")
    public Response jwks() {
        // short cache: a rotation elsewhere is picked up within a minute by a verifier that caches HTTP answers
        return Response.ok(keys.jwks(Instant.now())).header("Cache-Control", "max-age=60").build();
    }

    @GET
    @Path("auth/public-key")
    @PermitAll
    @Operation(summary = "Deprecated: the active Ed25519 public key (base64 X.509); use GET /api/v1/auth/jwks",
            description = "Only the active key: a verifier that pins it refuses tokens of the next key after a rotation.",
            deprecated = true)
    public PublicKeyResponse publicKey() {
        SigningKeys.Key k = keys.active();
        return new PublicKeyResponse("Ed25519", "X.509", JwtTokens.encodePublicKey(k.publicKey()), k.kid());
    }

    @POST
    @Path("auth/keys/rotate")
    @Consumes(MediaType.WILDCARD) // no body
    @RolesAllowed(BearerToken.ADMIN)
    @Operation(summary = "Make a new signing key active now",
            description = "Tokens signed by the previous key stay valid until they expire; its key stays in the JWKS "
                    + "until then.")
    public RotateResponse rotate() {
        SigningKeys.Key k = keys.rotate();
        return new RotateResponse(k.kid(), k.created());
    }

    @POST
    @Path("auth/sign-out")
    @Consumes(MediaType.WILDCARD) // no body
    @RolesAllowed({BearerToken.ADMIN, BearerToken.OPERATOR, BearerToken.TENANT})
    @Operation(summary = "Revoke the presented bearer token",
            description = "Refused on every control-plane replica and metadata plane within seconds, until it expires.")
    public Response signOut() {
        Object c = identity.getAttribute(Caller.CLAIMS_ATTRIBUTE);
        if (!(c instanceof BearerToken.Claims claims)) {
            return ProblemMappers.problem(400, "Invalid request", "sign-out needs Authorization: Bearer <token> "
                    + "of KVPool (a user name and password cannot be signed out; an OIDC token is revoked at its "
                    + "issuer)", null);
        }
        revocations.revokeToken(claims.jti(), claims.sub(), claims.exp());
        return Response.noContent().build();
    }

    @GET
    @Path("auth/revocations")
    @RolesAllowed({BearerToken.ADMIN, BearerToken.OPERATOR})
    @Operation(summary = "Revoked tokens (jti) and account cutoffs changed since a time; what metadata planes poll",
            description = "since: epoch milliseconds (0 or absent: every unexpired revocation). Poll again with "
                    + "since = the answer's nowMs minus a few seconds (commits may land late).")
    public Response feed(@QueryParam("since") String since) {
        long s = 0;
        if (since != null && !since.isEmpty()) {
            try {
                s = Long.parseLong(since);
            } catch (NumberFormatException e) {
                s = -1;
            }
            if (s < 0) {
                return ProblemMappers.problem(400, "Invalid request", "since must be epoch milliseconds (0 or more)",
                        "since");
            }
        }
        long from = s;
        return Response.ok(io.quarkus.narayana.jta.QuarkusTransaction.requiringNew()
                .call(() -> revocations.read(from, System.currentTimeMillis()))).build();
    }
}
