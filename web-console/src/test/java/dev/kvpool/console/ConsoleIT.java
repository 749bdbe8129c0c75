package dev.kvpool.console;

import static com.microsoft.playwright.assertions.PlaywrightAssertions.assertThat;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.microsoft.playwright.Page;
import java.nio.file.Path;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The console in Chromium against the real control plane (which serves it) and the real metadata plane: what a
 * person does in it, in order — sign in, create a storage and a group, watch an engine's traffic arrive in the
 * charts, edit against another admin, look as a tenant, ask why a prompt misses, replay a trace.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class ConsoleIT {
    @RegisterExtension
    static final Browser BROWSER = new Browser(Path.of(System.getProperty("kvpool.e2e.dir", "target/e2e")));
    static Stack stack;

    @BeforeAll
    static void start() throws Exception {
        stack = Stack.start();
    }

    @AfterAll
    static void stop() {
        if (stack != null) {
            stack.close();
        }
    }

    /** Opens the console at {@code path} and signs in on the sign-in page it is sent to. */
    static Page signIn(String path, String user, String password) {
        Page p = BROWSER.page();
        p.navigate(stack.cp + path);
        p.getByTestId("sign-in-user").fill(user);
        p.getByTestId("sign-in-password").fill(password);
        p.getByTestId("sign-in-submit").click();
        assertThat(p.getByTestId("masthead-user")).containsText(user);
        return p;
    }

    @Test
    @Order(1)
    void signInRefusesABadPasswordAndAcceptsTheRightOne() {
        Page p = BROWSER.page();
        p.navigate(stack.cp + "/");
        assertThat(p.getByTestId("sign-in-form")).isVisible();
        p.getByTestId("sign-in-user").fill("admin");
        p.getByTestId("sign-in-password").fill("not-the-password");
        p.getByTestId("sign-in-submit").click();
        assertThat(p.getByTestId("sign-in-error")).containsText("Wrong user name or password");
        assertThat(p.getByTestId("masthead-user")).hasCount(0);

        p.getByTestId("sign-in-password").fill(Stack.ADMIN_PW);
        p.getByTestId("sign-in-submit").click();
        assertThat(p.getByTestId("masthead-user")).containsText("admin");
        assertThat(p.getByTestId("masthead-role")).containsText("admin");
    }

    @Test
    @Order(2)
    void aDeepLinkSurvivesSignIn() {
        Page p = signIn("/groups", "admin", Stack.ADMIN_PW);
        assertTrue(p.url().endsWith("/groups"), "back on the page asked for, not " + p.url());
        assertEquals(200, p.navigate(stack.cp + "/groups").status(), "a reload of a console page serves the console");
    }
}
