package dev.kvpool.meta.debug;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.kvpool.api.proto.debug.ClearFaultsRequest;
import dev.kvpool.api.proto.debug.DebugService;
import dev.kvpool.api.proto.debug.InjectFaultRequest;
import dev.kvpool.meta.support.KvcmTestBase;
import dev.kvpool.meta.support.KvcmTestProfile;
import dev.kvpool.meta.support.MetaApi;
import dev.kvpool.meta.support.Transport;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.quarkus.grpc.GrpcClient;
import io.quarkus.test.junit.QuarkusTest;
import io.quarkus.test.junit.TestProfile;
import java.net.ConnectException;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/** The debug service off, as by default (the API suite's boot): nothing listens on its port, gRPC is UNIMPLEMENTED. */
@QuarkusTest
@TestProfile(KvcmTestProfile.class)
class DebugOffTest extends KvcmTestBase {
    @GrpcClient("debug")
    DebugService debug;

    @Test
    void noDebugListener() {
        assertThrows(ConnectException.class, () -> DebugHttp.post("clearFaults", "{}"));
        // the meta HTTP port does not serve the debug routes either
        assertEquals(404, MetaApi.postRaw("injectFault", "{\"api_name\":\"StartWriteCache\"}").statusCode());
    }

    @Test
    void grpcDebugServiceIsUnimplemented() {
        StatusRuntimeException e = assertThrows(StatusRuntimeException.class, () -> debug.injectFault(
                InjectFaultRequest.newBuilder().setApiName("StartWriteCache").build()).await().atMost(Duration.ofSeconds(30)));
        assertEquals(Status.Code.UNIMPLEMENTED, e.getStatus().getCode());
        e = assertThrows(StatusRuntimeException.class, () -> debug.clearFaults(ClearFaultsRequest.getDefaultInstance())
                .await().atMost(Duration.ofSeconds(30)));
        assertEquals(Status.Code.UNIMPLEMENTED, e.getStatus().getCode());
        assertTrue(FaultTable.PROCESS.snapshot().isEmpty());
        // and the meta calls the faults would touch work
        MetaApi a = api(Transport.GRPC);
        write(a, newInstance(a, "debug-off"), rndKeys(2));
    }
}
