package dev.kvpool.meta.debug;

import dev.kvpool.api.naming.Text;
import dev.kvpool.api.proto.debug.FaultTriggerStrategy;
import dev.kvpool.api.proto.debug.FaultType;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * KVCM's fault table (kvcm-compat §3.16): api name → fault. Process-global as KVCM's is, so the HTTP and gRPC debug
 * services and both meta transports see one table. It is only ever written through the debug service, which is off
 * unless {@code kvcm.service.enable_debug_service=true}: with it off the table stays empty and {@link #check} is one
 * map-emptiness test on the hot path.
 */
public final class FaultTable {
    /** The one table of this process (KVCM: "the state is process-global"). */
    public static final FaultTable PROCESS = new FaultTable();

    /** Bounds: a hostile caller cannot grow the table (or its names) without limit. */
    public static final int MAX_FAULTS = 64;
    public static final int MAX_API_NAME = 128;

    /** The RPCs that consult the table at baseline; only these can fire (and be counted by name). */
    public static final java.util.Set<String> CONSULTED = java.util.Set.of("GetCacheLocation", "StartWriteCache",
            "FinishWriteCache");

    public record Fault(FaultType type, FaultTriggerStrategy strategy, int triggerAtCall) {
    }

    /** A refused debug call: KVCM answers INVALID_ARGUMENT (5) with this reason. */
    public static final class Invalid extends RuntimeException {
        Invalid(String message) {
            super(message, null, false, false);
        }
    }

    private final Map<String, Fault> faults = new ConcurrentHashMap<>();
    private volatile MeterRegistry meters;
    private volatile Counter injected;
    private final Map<String, Counter> fired = new ConcurrentHashMap<>();

    FaultTable() {
    }

    /** Where injected/fired counts go (the plane's registry, once it is known). */
    public void meters(MeterRegistry m) {
        meters = m;
        injected = Counter.builder("kvpool.meta.debug.faults.injected")
                .description("faults stored by DebugService InjectFault").register(m);
        fired.clear();
    }

    static String checkName(String apiName) {
        if (apiName == null || apiName.isEmpty()) {
            throw new Invalid("api_name is required");
        }
        String p = Text.opaqueProblem(apiName, MAX_API_NAME);
        if (p != null) {
            throw new Invalid("api_name: " + p);
        }
        return apiName;
    }

    /** Stores or overwrites the fault for {@code apiName}; {@link Invalid} when the request breaks a rule. */
    public void inject(String apiName, FaultType type, FaultTriggerStrategy strategy, int triggerAtCall) {
        checkName(apiName);
        if (type == null || type == FaultType.UNRECOGNIZED) {
            throw new Invalid("fault_type is not a valid FaultType (FT_INTERNAL_ERROR)");
        }
        if (strategy == null || strategy == FaultTriggerStrategy.UNRECOGNIZED) {
            throw new Invalid("fault_trigger_strategy is not a valid FaultTriggerStrategy (ALWAYS or ONCE)");
        }
        Fault f = new Fault(type, strategy, triggerAtCall);
        synchronized (faults) { // the size check and the insert together, so the bound holds under races
            if (!faults.containsKey(apiName) && faults.size() >= MAX_FAULTS) {
                throw new Invalid("the fault table holds its maximum of " + MAX_FAULTS
                        + " faults: remove one or clear them first");
            }
            faults.put(apiName, f);
        }
        Counter c = injected;
        if (c != null) {
            c.increment();
        }
    }

    /** Removes the fault of {@code apiName}; an unknown name is {@link Invalid} (KVCM answers 5). */
    public void remove(String apiName) {
        checkName(apiName);
        if (faults.remove(apiName) == null) {
            throw new Invalid("no fault is injected for api '" + Text.safe(apiName) + "'");
        }
    }

    public void clear() {
        faults.clear();
    }

    public Map<String, Fault> snapshot() {
        return Map.copyOf(faults);
    }

    /**
     * True when a call of {@code api} with {@code traceId} must fail. ALWAYS fails every call; ONCE only a call whose
     * trace_id's text after the last '_' parses as an integer equal to trigger_at_call (a trace_id without '_', or
     * with text there that is not an integer, never matches).
     */
    public boolean fires(String api, String traceId) {
        if (faults.isEmpty()) {
            return false;
        }
        Fault f = faults.get(api);
        if (f == null) {
            return false;
        }
        boolean fire = switch (f.strategy()) {
            case ALWAYS -> true;
            case ONCE -> callNumber(traceId) == (long) f.triggerAtCall();
            default -> false;
        };
        if (fire) {
            MeterRegistry m = meters;
            if (m != null && CONSULTED.contains(api)) {
                fired.computeIfAbsent(api, a -> Counter.builder("kvpool.meta.debug.faults.fired").tag("api", a)
                        .description("KVCM meta calls failed by an injected fault").register(m)).increment();
            }
        }
        return fire;
    }

    /** The integer after the last '_' of a trace id, or Long.MIN_VALUE when there is none. */
    static long callNumber(String traceId) {
        if (traceId == null) {
            return Long.MIN_VALUE;
        }
        int i = traceId.lastIndexOf('_');
        if (i < 0 || i == traceId.length() - 1 || traceId.length() - i > 12) {
            return Long.MIN_VALUE;
        }
        try {
            return Integer.parseInt(traceId, i + 1, traceId.length(), 10);
        } catch (NumberFormatException e) {
            return Long.MIN_VALUE;
        }
    }
}
