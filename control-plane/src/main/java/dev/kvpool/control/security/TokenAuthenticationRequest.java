package dev.kvpool.control.security;

import io.quarkus.security.identity.request.BaseAuthenticationRequest;

/** A bearer token presented in {@code Authorization: Bearer ...} (HTTP) or the {@code authorization} metadata (gRPC). */
public class TokenAuthenticationRequest extends BaseAuthenticationRequest {
    public final String token;

    public TokenAuthenticationRequest(String token) {
        this.token = token;
    }
}
