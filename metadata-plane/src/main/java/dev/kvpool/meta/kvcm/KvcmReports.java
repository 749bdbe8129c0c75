package dev.kvpool.meta.kvcm;

import dev.kvpool.api.proto.meta.GetHostCacheStateRequest;
import dev.kvpool.api.proto.meta.GetHostCacheStateResponse;
import dev.kvpool.api.proto.meta.ReportEventRequest;
import dev.kvpool.api.proto.meta.ReportEventResponse;

/**
 * KVCM's engine-event APIs as the transports call them (after their token check), answered by the engine reports
 * (engine.report, itself a KVCM adapter); an interface so that this package does not depend on that one.
 */
public interface KvcmReports {
    ReportEventResponse reportEvent(ReportEventRequest q);

    GetHostCacheStateResponse getHostCacheState(GetHostCacheStateRequest q);

    /** {@link #getHostCacheState} as proto3 JSON bytes (the HTTP path). */
    byte[] getHostCacheStateJson(GetHostCacheStateRequest q);
}
