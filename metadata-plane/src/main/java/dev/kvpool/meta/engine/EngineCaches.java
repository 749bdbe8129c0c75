package dev.kvpool.meta.engine;

import dev.kvpool.engine.view.EngineView;
import dev.kvpool.engine.view.IndexedEngineView;
import jakarta.enterprise.context.ApplicationScoped;

/**
 * The one view of what the engines' own caches hold (vLLM / SGLang KV events and KVCM ReportEvent feed it; prefix
 * scores and GetHostCacheState read it).
 */
@ApplicationScoped
public class EngineCaches {
    private final EngineView view = new IndexedEngineView();

    public EngineView view() {
        return view;
    }
}
