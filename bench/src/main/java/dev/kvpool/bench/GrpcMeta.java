package dev.kvpool.bench;

import dev.kvpool.api.proto.meta.GetCacheLocationRequest;
import dev.kvpool.api.proto.meta.GetCacheLocationResponse;
import dev.kvpool.api.proto.meta.MetaServiceGrpc;
import io.grpc.ManagedChannel;
import io.grpc.ManagedChannelBuilder;

/**
 * The KVCM gRPC client of {@code bench prefix --grpc}. Kept out of {@link Main} so that the benches run where the
 * gRPC jars are not on the class path (the device machine gets only the agent's jars).
 */
final class GrpcMeta implements AutoCloseable {
    private final ManagedChannel channel;
    private final MetaServiceGrpc.MetaServiceBlockingStub stub;

    GrpcMeta(String target) {
        channel = ManagedChannelBuilder.forTarget(target).usePlaintext().build();
        stub = MetaServiceGrpc.newBlockingStub(channel);
    }

    GetCacheLocationResponse getCacheLocation(GetCacheLocationRequest q) {
        return stub.getCacheLocation(q);
    }

    @Override
    public void close() {
        channel.shutdownNow();
    }
}
