package dev.kvpool.control.console;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class ConsoleRoutesTest {
    private static final String BROWSER = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8";

    @Test
    void pageNavigationsOutsideTheApiGetTheConsole() {
        assertTrue(ConsoleRoutes.isPageNavigation("/", BROWSER));
        assertTrue(ConsoleRoutes.isPageNavigation("/groups/search", BROWSER));
        assertTrue(ConsoleRoutes.isPageNavigation("/instances/my.instance", BROWSER));
        assertTrue(ConsoleRoutes.isPageNavigation("/apis", BROWSER));
    }

    @Test
    void apiQuarkusAndAssetRequestsPassThrough() {
        assertFalse(ConsoleRoutes.isPageNavigation("/api/v1/storages", BROWSER));
        assertFalse(ConsoleRoutes.isPageNavigation("/api", BROWSER));
        assertFalse(ConsoleRoutes.isPageNavigation("/api/getConfigSnapshot", BROWSER));
        assertFalse(ConsoleRoutes.isPageNavigation("/q/swagger-ui/", BROWSER));
        assertFalse(ConsoleRoutes.isPageNavigation("/assets/index-1234.js", "*/*"));
        assertFalse(ConsoleRoutes.isPageNavigation("/groups/search", "application/json"));
        assertFalse(ConsoleRoutes.isPageNavigation("/groups/search", null));
    }
}
