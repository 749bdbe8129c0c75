package dev.kvpool.control.security;

import dev.kvpool.api.auth.BearerToken;
import dev.kvpool.api.auth.JwtTokens;
import dev.kvpool.control.account.AccountEntity;
import dev.kvpool.control.account.AccountService;
import io.quarkus.security.AuthenticationFailedException;
import io.quarkus.security.identity.AuthenticationRequestContext;
import io.quarkus.security.identity.IdentityProvider;
import io.quarkus.security.identity.SecurityIdentity;
import io.quarkus.security.identity.request.UsernamePasswordAuthenticationRequest;
import io.quarkus.security.runtime.QuarkusPrincipal;
import io.quarkus.security.runtime.QuarkusSecurityIdentity;
import io.smallrye.mutiny.Uni;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.inject.Inject;
import java.time.Instant;
import java.util.Set;
import java.util.TreeSet;
import org.eclipse.microprofile.config.inject.ConfigProperty;

/** Turns a bearer token (verified offline) or a user name + password (checked against the hash) into an identity. */
public final class IdentityProviders {
    private IdentityProviders() {
    }

    static SecurityIdentity identity(String name, String role, Set<String> groups) {
        return QuarkusSecurityIdentity.builder().setPrincipal(new QuarkusPrincipal(name)).addRole(role)
                .addAttribute(Caller.GROUPS_ATTRIBUTE, Set.copyOf(groups)).build();
    }

    /** A token's identity also carries its claims, so sign-out can revoke exactly the presented token. */
    static SecurityIdentity identity(BearerToken.Claims c) {
        return QuarkusSecurityIdentity.builder().setPrincipal(new QuarkusPrincipal(c.sub())).addRole(c.role())
                .addAttribute(Caller.GROUPS_ATTRIBUTE, Set.copyOf(c.groups()))
                .addAttribute(Caller.CLAIMS_ATTRIBUTE, c).build();
    }

    @ApplicationScoped
    public static class Token implements IdentityProvider<TokenAuthenticationRequest> {
        @Inject
        SigningKeys keys;
        @Inject
        TokenRevocations revocations;
        @Inject
        OidcIssuer oidc;
        @ConfigProperty(name = "kvpool.control.token-issuer", defaultValue = "kvpool")
        String issuer;

        @Override
        public Class<TokenAuthenticationRequest> getRequestType() {
            return TokenAuthenticationRequest.class;
        }

        @Override
        public Uni<SecurityIdentity> authenticate(TokenAuthenticationRequest request, AuthenticationRequestContext ctx) {
            return ctx.runBlocking(() -> {
                BearerToken.Claims c;
                if (oidc.issued(request.token)) {
                    // an external token: its issuer's keys and claim mapping; revocation is the issuer's (short
                    // lifetimes), and it carries no claims attribute (sign-out cannot revoke it here)
                    try {
                        c = oidc.verify(request.token);
                    } catch (BearerToken.InvalidTokenException e) {
                        throw new AuthenticationFailedException(e.getMessage());
                    }
                    return identity(c.sub(), c.role(), c.groups());
                }
                try {
                    c = JwtTokens.verify(request.token, issuer, keys::verificationKey, Instant.now());
                } catch (BearerToken.InvalidTokenException e) {
                    throw new AuthenticationFailedException(e.getMessage());
                }
                String revoked = revocations.refusal(c);
                if (revoked != null) {
                    throw new AuthenticationFailedException(revoked);
                }
                return identity(c);
            });
        }
    }

    @ApplicationScoped
    public static class Password implements IdentityProvider<UsernamePasswordAuthenticationRequest> {
        @Inject
        AccountService accounts;

        @Override
        public Class<UsernamePasswordAuthenticationRequest> getRequestType() {
            return UsernamePasswordAuthenticationRequest.class;
        }

        @Override
        public Uni<SecurityIdentity> authenticate(UsernamePasswordAuthenticationRequest request,
                                                  AuthenticationRequestContext ctx) {
            return ctx.runBlocking(() -> {
                AccountEntity a = accounts.authenticate(request.getUsername(),
                        new String(request.getPassword().getPassword())).orElseThrow(
                        () -> new AuthenticationFailedException("wrong user name or password"));
                return identity(a.name, a.role, new TreeSet<>(a.groups));
            });
        }
    }
}
