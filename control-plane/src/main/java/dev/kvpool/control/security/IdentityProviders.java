package dev.kvpool.control.security;

import dev.kvpool.api.auth.BearerToken;
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

/** Turns a bearer token (verified offline) or a user name + password (checked against the hash) into an identity. */
public final class IdentityProviders {
    private IdentityProviders() {
    }

    static SecurityIdentity identity(String name, String role, Set<String> groups) {
        return QuarkusSecurityIdentity.builder().setPrincipal(new QuarkusPrincipal(name)).addRole(role)
                .addAttribute(Caller.GROUPS_ATTRIBUTE, Set.copyOf(groups)).build();
    }

    @ApplicationScoped
    public static class Token implements IdentityProvider<TokenAuthenticationRequest> {
        @Inject
        SigningKeys keys;

        @Override
        public Class<TokenAuthenticationRequest> getRequestType() {
            return TokenAuthenticationRequest.class;
        }

        @Override
        public Uni<SecurityIdentity> authenticate(TokenAuthenticationRequest request, AuthenticationRequestContext ctx) {
            return ctx.runBlocking(() -> {
                try {
                    BearerToken.Claims c = BearerToken.verify(keys.publicKey(), request.token, Instant.now());
                    return identity(c.sub(), c.role(), c.groups());
                } catch (BearerToken.InvalidTokenException e) {
                    throw new AuthenticationFailedException(e.getMessage());
                }
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
