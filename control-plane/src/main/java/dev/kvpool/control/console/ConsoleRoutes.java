package dev.kvpool.control.console;

import io.vertx.core.http.HttpMethod;
import io.vertx.ext.web.Router;
import io.vertx.ext.web.RoutingContext;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;

/**
 * Client-side routing for the web console that Quinoa serves at {@code /}: a browser opening or reloading a console
 * page such as {@code /groups/search} gets the console's {@code index.html}, which then routes itself.
 *
 * <p>Quinoa's own SPA fallback runs after the REST layer, and the REST layer answers every unmatched path with its
 * 404 problem (our exception mappers), so the fallback never saw them. This route runs first and only takes page
 * navigations: GET, {@code Accept: text/html}, outside {@code /api} and {@code /q}. Asset requests (scripts, styles,
 * images) do not accept HTML and pass through, so a missing asset is still a 404 rather than a page.
 *
 * <p>{@code index.html} is also marked {@code no-cache}: it names the content-hashed assets of one build, and a
 * browser that kept it for a day (Quinoa's default for every file) would load the previous build after an upgrade.
 */
@ApplicationScoped
public class ConsoleRoutes {
    /** Before the REST layer and Quinoa's handlers; after the HTTP guard (which only refuses malformed requests). */
    static final int ORDER = -10;

    void routes(@Observes Router router) {
        router.route().order(ORDER).handler(this::page);
    }

    void page(RoutingContext rc) {
        if (rc.request().method() == HttpMethod.GET && isPageNavigation(rc.normalizedPath(),
                rc.request().getHeader("Accept"))) {
            rc.addHeadersEndHandler(v -> rc.response().headers().set("Cache-Control", "no-cache"));
            if (!rc.normalizedPath().equals("/")) {
                rc.reroute("/");
                return;
            }
        }
        rc.next();
    }

    /** A console page: HTML asked for, and a path that is not the REST API, a KVCM admin route or Quarkus' own. */
    static boolean isPageNavigation(String path, String accept) {
        if (path == null || accept == null || !accept.contains("text/html")) {
            return false;
        }
        return !(path.equals("/api") || path.startsWith("/api/") || path.equals("/q") || path.startsWith("/q/"));
    }
}
