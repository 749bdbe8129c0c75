package dev.kvpool.control.security;

import io.grpc.Metadata;
import io.quarkus.grpc.auth.GrpcSecurityMechanism;
import io.quarkus.security.identity.request.AuthenticationRequest;
import jakarta.enterprise.context.ApplicationScoped;

/** gRPC credentials: the {@code authorization} metadata entry, same values as the HTTP header. */
@ApplicationScoped
public class GrpcAuthMechanism implements GrpcSecurityMechanism {
    static final Metadata.Key<String> AUTHORIZATION = Metadata.Key.of("authorization", Metadata.ASCII_STRING_MARSHALLER);

    @Override
    public boolean handles(Metadata metadata) {
        return BearerAuthMechanism.fromHeader(metadata.get(AUTHORIZATION)) != null;
    }

    @Override
    public AuthenticationRequest createAuthenticationRequest(Metadata metadata) {
        return BearerAuthMechanism.fromHeader(metadata.get(AUTHORIZATION));
    }
}
