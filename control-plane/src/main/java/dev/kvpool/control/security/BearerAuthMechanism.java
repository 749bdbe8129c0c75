package dev.kvpool.control.security;

import io.quarkus.security.credential.PasswordCredential;
import io.quarkus.security.identity.IdentityProviderManager;
import io.quarkus.security.identity.SecurityIdentity;
import io.quarkus.security.identity.request.AuthenticationRequest;
import io.quarkus.security.identity.request.UsernamePasswordAuthenticationRequest;
import io.quarkus.vertx.http.runtime.security.ChallengeData;
import io.quarkus.vertx.http.runtime.security.HttpAuthenticationMechanism;
import io.quarkus.vertx.http.runtime.security.HttpSecurityUtils;
import io.smallrye.mutiny.Uni;
import io.vertx.ext.web.RoutingContext;
import jakarta.enterprise.context.ApplicationScoped;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.Set;

/**
 * HTTP credentials: {@code Authorization: Bearer <token>} (issued by POST /api/v1/tokens), or
 * {@code Authorization: Basic base64(user:password)} for clients that can only send a fixed header (KVCM admin tools).
 * No header: the request is anonymous and only @PermitAll routes answer it.
 */
@ApplicationScoped
public class BearerAuthMechanism implements HttpAuthenticationMechanism {
    @Override
    public Uni<SecurityIdentity> authenticate(RoutingContext ctx, IdentityProviderManager ipm) {
        AuthenticationRequest req = fromHeader(ctx.request().getHeader("Authorization"));
        if (req == null) {
            return Uni.createFrom().nullItem();
        }
        return ipm.authenticate(HttpSecurityUtils.setRoutingContextAttribute(req, ctx));
    }

    /** Parses an Authorization value; null when absent or of another scheme. */
    public static AuthenticationRequest fromHeader(String h) {
        if (h == null) {
            return null;
        }
        h = h.trim();
        if (h.regionMatches(true, 0, "Bearer ", 0, 7)) {
            return new TokenAuthenticationRequest(h.substring(7).trim());
        }
        if (h.regionMatches(true, 0, "Basic ", 0, 6)) {
            String up;
            try {
                up = new String(Base64.getDecoder().decode(h.substring(6).trim()), StandardCharsets.UTF_8);
            } catch (IllegalArgumentException e) {
                return new UsernamePasswordAuthenticationRequest("", new PasswordCredential(new char[0]));
            }
            int c = up.indexOf(':');
            return new UsernamePasswordAuthenticationRequest(c < 0 ? up : up.substring(0, c),
                    new PasswordCredential(c < 0 ? new char[0] : up.substring(c + 1).toCharArray()));
        }
        return null;
    }

    @Override
    public Uni<ChallengeData> getChallenge(RoutingContext ctx) {
        return Uni.createFrom().item(new ChallengeData(401, "WWW-Authenticate", "Bearer realm=\"kvpool\""));
    }

    @Override
    public Set<Class<? extends AuthenticationRequest>> getCredentialTypes() {
        return Set.of(TokenAuthenticationRequest.class, UsernamePasswordAuthenticationRequest.class);
    }
}
