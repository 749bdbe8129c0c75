package dev.kvpool.agent.tier;

import com.google.protobuf.Message;
import com.sun.net.httpserver.HttpServer;
import dev.kvpool.api.json.ProtoJson;
import dev.kvpool.api.proto.meta.BlockMask;
import dev.kvpool.api.proto.meta.BoolMasksType;
import dev.kvpool.api.proto.meta.CacheLocation;
import dev.kvpool.api.proto.meta.CommonResponse;
import dev.kvpool.api.proto.meta.CommonResponseHeader;
import dev.kvpool.api.proto.meta.ErrorCode;
import dev.kvpool.api.proto.meta.FinishWriteCacheRequest;
import dev.kvpool.api.proto.meta.GetCacheLocationRequest;
import dev.kvpool.api.proto.meta.GetCacheLocationResponse;
import dev.kvpool.api.proto.meta.LocationSpec;
import dev.kvpool.api.proto.meta.RegisterInstanceResponse;
import dev.kvpool.api.proto.meta.StartWriteCacheRequest;
import dev.kvpool.api.proto.meta.StartWriteCacheResponse;
import dev.kvpool.api.proto.meta.Status;
import dev.kvpool.api.proto.meta.StorageType;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * A metadata plane that speaks KVCM's HTTP protocol correctly but hands out whatever locations a test gives it:
 * what a compromised or confused plane would send. The real plane cannot be made to do that (it builds its paths
 * through StoragePaths), so this stands in for the hostile peer; the agent's side under test is the real one.
 */
final class HostilePlane implements AutoCloseable {
    private final HttpServer server;
    /** The URI per key of the next startWriteCache and getCacheLocation answers (cycled when shorter than the keys). */
    volatile List<String> writeUris = List.of(), readUris = List.of();
    /** The success masks finishWriteCache reported, in order. */
    final List<List<Boolean>> finishes = new CopyOnWriteArrayList<>();

    HostilePlane() throws IOException {
        server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
        server.createContext("/api/", ex -> {
            try (ex) {
                String rpc = ex.getRequestURI().getPath().substring("/api/".length());
                byte[] body = ex.getRequestBody().readAllBytes();
                Message answer = switch (rpc) {
                    case "registerInstance" -> RegisterInstanceResponse.newBuilder().setHeader(ok()).build();
                    case "startWriteCache" -> {
                        int n = ProtoJson.merge(body, StartWriteCacheRequest.newBuilder()).getBlockKeysCount();
                        BoolMasksType.Builder none = BoolMasksType.newBuilder();
                        StartWriteCacheResponse.Builder b = StartWriteCacheResponse.newBuilder().setHeader(ok())
                                .setWriteSessionId("s" + finishes.size());
                        for (int i = 0; i < n; i++) {
                            none.addValues(false);
                            b.addLocations(location(writeUris.get(i % writeUris.size())));
                        }
                        yield b.setBlockMask(BlockMask.newBuilder().setBoolMasks(none)).build();
                    }
                    case "finishWriteCache" -> {
                        List<Boolean> mask = new ArrayList<>(ProtoJson.merge(body, FinishWriteCacheRequest.newBuilder())
                                .getSuccessBlocks().getBoolMasks().getValuesList());
                        finishes.add(mask);
                        yield CommonResponse.newBuilder().setHeader(ok()).build();
                    }
                    case "getCacheLocation" -> {
                        int n = ProtoJson.merge(body, GetCacheLocationRequest.newBuilder()).getBlockKeysCount();
                        GetCacheLocationResponse.Builder b = GetCacheLocationResponse.newBuilder().setHeader(ok());
                        for (int i = 0; i < n; i++) {
                            b.addLocations(location(readUris.get(i % readUris.size())));
                        }
                        yield b.build();
                    }
                    default -> CommonResponse.newBuilder().setHeader(ok()).build();
                };
                byte[] out = ProtoJson.print(answer);
                ex.getResponseHeaders().set("Content-Type", "application/json");
                ex.sendResponseHeaders(200, out.length);
                try (OutputStream os = ex.getResponseBody()) {
                    os.write(out);
                }
            }
        });
        server.start();
    }

    private static CommonResponseHeader ok() {
        return CommonResponseHeader.newBuilder().setStatus(Status.newBuilder().setCode(ErrorCode.OK)).build();
    }

    private static CacheLocation location(String uri) {
        return CacheLocation.newBuilder().setType(StorageType.ST_NFS).setSpecSize(1)
                .addLocationSpecs(LocationSpec.newBuilder().setName("tp0").setUri(uri)).build();
    }

    String uri() {
        return "http://127.0.0.1:" + server.getAddress().getPort();
    }

    @Override
    public void close() {
        server.stop(0);
    }
}
