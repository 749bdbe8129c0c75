package dev.kvpool.console;

import com.microsoft.playwright.BrowserContext;
import com.microsoft.playwright.BrowserType;
import com.microsoft.playwright.Page;
import com.microsoft.playwright.Playwright;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.TestWatcher;

/**
 * Debian's Chromium driven by Playwright for Java (never a downloaded browser: {@code PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD}
 * and the executable path), one fresh context (cookies, storage) per session a test opens. A failed test leaves a
 * screenshot of every page it opened under {@code target/e2e/screenshots/}.
 */
final class Browser implements AutoCloseable, TestWatcher {
    private final Playwright playwright;
    private final com.microsoft.playwright.Browser chromium;
    private final List<Page> open = new java.util.concurrent.CopyOnWriteArrayList<>();
    private final Path shots;

    Browser(Path dir) {
        playwright = Playwright.create(new Playwright.CreateOptions()
                .setEnv(Map.of("PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD", "1")));
        String exe = System.getProperty("kvpool.chromium", "/usr/bin/chromium");
        chromium = playwright.chromium().launch(new BrowserType.LaunchOptions().setExecutablePath(Path.of(exe))
                .setHeadless(true).setArgs(List.of("--no-sandbox", "--disable-gpu", "--disable-quic",
                        "--no-first-run", "--disable-background-networking", "--disable-component-update",
                        "--disable-sync")));
        shots = dir.resolve("screenshots");
    }

    /** A new browser session (its own sessionStorage, so its own sign-in). */
    Page page() {
        BrowserContext ctx = chromium.newContext(new com.microsoft.playwright.Browser.NewContextOptions()
                .setViewportSize(1440, 960));
        ctx.setDefaultTimeout(20_000);
        Page p = ctx.newPage();
        open.add(p);
        return p;
    }

    /** Closes the sessions of the test that just ran; on failure their screenshots are kept first. */
    void endTest(String name, boolean failed) {
        int i = 0;
        for (Page p : open) {
            if (failed && !p.isClosed()) {
                try {
                    Files.createDirectories(shots);
                    p.screenshot(new Page.ScreenshotOptions().setFullPage(true)
                            .setPath(shots.resolve(name.replaceAll("[^A-Za-z0-9_.-]", "_") + "-" + i++ + ".png")));
                } catch (Exception e) {
                    System.err.println("screenshot failed: " + e);
                }
            }
            p.context().close();
        }
        open.clear();
    }

    @Override
    public void testSuccessful(ExtensionContext c) {
        endTest(c.getDisplayName(), false);
    }

    @Override
    public void testFailed(ExtensionContext c, Throwable cause) {
        endTest(c.getRequiredTestMethod().getName(), true);
    }

    @Override
    public void testAborted(ExtensionContext c, Throwable cause) {
        endTest(c.getRequiredTestMethod().getName(), true);
    }

    @Override
    public void testDisabled(ExtensionContext c, Optional<String> reason) {
    }

    @Override
    public void close() {
        chromium.close();
        playwright.close();
    }
}
