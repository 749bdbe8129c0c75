package dev.kvpool.meta.engine;

import dev.kvpool.engine.view.EngineView;
import dev.kvpool.engine.view.MapWalkEngineView;
import jakarta.enterprise.context.ApplicationScoped;

/**
 * The one view of what the engines' own caches hold (vLLM / SGLang KV events and KVCM ReportEvent feed it; prefix
 * scores and GetHostCacheState read it).
 */
@ApplicationScoped
public class EngineCaches {
    private final EngineView view = new MapWalkEngineView();

    public EngineView view() {
        return view;
    }
}
