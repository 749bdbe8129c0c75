package dev.kvpool.meta.debug;

import dev.kvpool.api.proto.debug.ClearFaultsRequest;
import dev.kvpool.api.proto.debug.CommonResponse;
import dev.kvpool.api.proto.debug.CommonResponseHeader;
import dev.kvpool.api.proto.debug.ErrorCode;
import dev.kvpool.api.proto.debug.InjectFaultRequest;
import dev.kvpool.api.proto.debug.RemoveFaultRequest;
import dev.kvpool.api.proto.debug.Status;
import org.jboss.logging.Logger;

/**
 * The three DebugService RPCs over the fault table, once for both transports (kvcm-compat §3.16). Not leader-gated;
 * request_id stays empty, as KVCM leaves it on every debug RPC (§1.6).
 */
public final class DebugCalls {
    private static final Logger LOG = Logger.getLogger(DebugCalls.class);

    private final FaultTable table;

    public DebugCalls(FaultTable table) {
        this.table = table;
    }

    public static CommonResponse response(ErrorCode code, String message) {
        return CommonResponse.newBuilder().setHeader(CommonResponseHeader.newBuilder()
                .setStatus(Status.newBuilder().setCode(code).setMessage(message)).setRequestId("")).build();
    }

    public CommonResponse injectFault(InjectFaultRequest r) {
        try {
            table.inject(r.getApiName(), r.getFaultType(), r.getFaultTriggerStrategy(), r.getTriggerAtCall());
        } catch (FaultTable.Invalid e) {
            return response(ErrorCode.INVALID_ARGUMENT, e.getMessage());
        }
        // a fault changes what clients see: worth one line in the log each time
        LOG.warnf("fault injected: %s %s %s%s", dev.kvpool.api.naming.Text.safe(r.getApiName()), r.getFaultType(),
                r.getFaultTriggerStrategy(), r.getFaultTriggerStrategy()
                        == dev.kvpool.api.proto.debug.FaultTriggerStrategy.ONCE ? " at call " + r.getTriggerAtCall() : "");
        return response(ErrorCode.OK, "Fault injected successfully");
    }

    public CommonResponse removeFault(RemoveFaultRequest r) {
        try {
            table.remove(r.getApiName());
        } catch (FaultTable.Invalid e) {
            return response(ErrorCode.INVALID_ARGUMENT, e.getMessage());
        }
        LOG.infof("fault removed: %s", dev.kvpool.api.naming.Text.safe(r.getApiName()));
        return response(ErrorCode.OK, "Fault removed successfully");
    }

    public CommonResponse clearFaults(ClearFaultsRequest r) {
        table.clear();
        LOG.info("faults cleared");
        return response(ErrorCode.OK, "Faults cleared successfully");
    }
}
