package dev.kvpool.meta.debug;

import io.smallrye.config.ConfigMapping;
import io.smallrye.config.WithDefault;
import java.util.Optional;

/** KVCM's DebugService (kvcm-compat §1.1, §3.16); application.properties maps kvcm.service.enable_debug_service here. */
@ConfigMapping(prefix = "kvpool.meta.debug")
public interface DebugSettings {
    /**
     * KVCM's DebugService: fault injection for test harnesses, HTTP on the meta HTTP port + 3000 and gRPC on the
     * meta gRPC port; an admin or operator token when tokens are enforced (docs/kvcm-compatibility.md). Never in
     * production. Off by default: with it off no debug listener opens and the gRPC DebugService answers
     * UNIMPLEMENTED.
     */
    @WithDefault("false")
    boolean enabled();

    /** The debug HTTP port; unset: KVCM's meta HTTP port + 3000 (9382 with the defaults). */
    Optional<Integer> httpPort();

    /** Where the debug HTTP listener binds (KVCM binds every listener to 0.0.0.0). */
    @WithDefault("0.0.0.0")
    String host();
}
