package dev.kvpool.operator.reconciler;

import dev.kvpool.testing.ChildProcesses;
import dev.kvpool.testing.TcpSwitch;
import io.quarkus.test.common.QuarkusTestResourceLifecycleManager;
import java.io.IOException;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * The packaged control plane on its embedded H2 database, as a child JVM on free ports (as the web console's
 * end-to-end tests run it), and the operator pointed at it: {@code kvpool.operator.control-plane-url} replaces the
 * in-cluster Service URL, and a short resync period makes drift visible within seconds.
 */
public class ControlPlaneProcess implements QuarkusTestResourceLifecycleManager {
    static final String ADMIN_USER = "admin";
    static final String ADMIN_PASSWORD = "Gitops-It-Adm1n-Pw";
    static final Duration RESYNC = Duration.ofSeconds(2);
    /** The control plane itself (the test's own calls behind the operator's back). */
    static volatile String url;
    /** The operator reaches it through this switch, which a test can point at a closed port (an outage). */
    static volatile TcpSwitch operatorPath;
    static volatile int httpPort;

    private Process process;
    private Path dir;

    @Override
    public Map<String, String> start() {
        String jar = System.getProperty("kvpool.control.jar");
        if (jar == null || !Files.isRegularFile(Path.of(jar))) {
            throw new IllegalStateException("packaged control plane missing (kvpool.control.jar=" + jar + "): build it "
                    + "first, e.g. ./mvnw -pl control-plane -am package -DskipTests");
        }
        try {
            dir = Path.of(System.getProperty("kvpool.it.dir", "target/it")).toAbsolutePath();
            deleteTree(dir);
            Files.createDirectories(dir);
            int http = freePort();
            int grpc = freePort();
            String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
            process = ChildProcesses.killOnExit(new ProcessBuilder(List.of(java, "-Xmx384m", "-XX:+UseSerialGC",
                    "-Dkvpool.data-dir=" + dir.resolve("cp-data"),
                    "-Dkvpool.control.bootstrap-admin.password=" + ADMIN_PASSWORD,
                    "-Dkvpool.control.http-port=" + http, "-Dkvpool.control.grpc-port=" + grpc,
                    "-jar", jar)).redirectErrorStream(true).redirectOutput(dir.resolve("control-plane.log").toFile())
                    .start());
            url = "http://127.0.0.1:" + http;
            httpPort = http;
            awaitReady(Duration.ofSeconds(120));
            operatorPath = TcpSwitch.to(http);
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
        return Map.of("kvpool.operator.control-plane-url", "http://127.0.0.1:" + operatorPath.port(),
                "kvpool.operator.resync-period", RESYNC.toSeconds() + "s");
    }

    private void awaitReady(Duration limit) {
        HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();
        long end = System.nanoTime() + limit.toNanos();
        while (System.nanoTime() < end) {
            if (!process.isAlive()) {
                throw new IllegalStateException("the control plane exited; log in " + dir.resolve("control-plane.log"));
            }
            try {
                if (http.send(HttpRequest.newBuilder(URI.create(url + "/q/health/ready")).timeout(Duration.ofSeconds(2))
                        .build(), HttpResponse.BodyHandlers.discarding()).statusCode() == 200) {
                    return;
                }
            } catch (IOException e) {
                // not listening yet
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException(e);
            }
            try {
                Thread.sleep(250);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException(e);
            }
        }
        throw new IllegalStateException("the control plane was not ready within " + limit + "; log in "
                + dir.resolve("control-plane.log"));
    }

    @Override
    public void stop() {
        if (operatorPath != null) {
            operatorPath.close();
        }
        if (process != null) {
            process.destroy();
            try {
                if (!process.waitFor(20, TimeUnit.SECONDS)) {
                    process.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        }
    }

    private static void deleteTree(Path p) throws IOException {
        if (!Files.exists(p)) {
            return;
        }
        try (Stream<Path> s = Files.walk(p)) {
            for (Path x : s.sorted(Comparator.reverseOrder()).toList()) {
                Files.delete(x);
            }
        }
    }
}
