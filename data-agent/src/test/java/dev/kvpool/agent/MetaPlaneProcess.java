package dev.kvpool.agent;

import java.io.IOException;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * The real, packaged metadata plane ({@code metadata-plane/target/quarkus-app/quarkus-run.jar}) as a child JVM,
 * with a startup config whose one file storage is rooted in a temp directory.
 */
public final class MetaPlaneProcess implements AutoCloseable {
    public final Path dir;
    public final Path storageRoot;
    public final int httpPort;
    private final int grpcPort;
    private final Path config;
    private Process process;
    private final Path log;

    public static Path runnerJar() {
        return Path.of(System.getProperty("kvpool.meta.runner.jar", "../metadata-plane/target/quarkus-app/quarkus-run.jar"));
    }

    public MetaPlaneProcess(Path dir, int keysPerFile) throws Exception {
        this.dir = dir;
        this.storageRoot = dir.resolve("storage");
        Files.createDirectories(storageRoot);
        config = dir.resolve("startup.json");
        Files.writeString(config, """
                {"storages": [{"storage_config": {"type": "file", "global_unique_name": "nfs_agent",
                   "storage_spec": {"root_path": "%s/", "key_count_per_file": %d}}}],
                 "instance_groups": [{"name": "default", "storage_candidates": ["nfs_agent"],
                   "global_quota_group_name": "q", "max_instance_count": 100,
                   "quota": {"capacity": 100000000000, "quota_config": [{"storage_type": "file", "capacity": 100000000000}]},
                   "cache_config": {"cache_prefer_strategy": 2,
                                    "meta_indexer_config": {"max_key_count": 1000000, "mutex_shard_num": 16}}}]}
                """.formatted(storageRoot.toAbsolutePath(), keysPerFile));
        httpPort = freePort();
        grpcPort = freePort();
        log = dir.resolve("meta.log");
        start();
    }

    /** Starts the plane (again, after {@link #kill}: same ports, same data directory) and waits until it serves. */
    public void start() throws Exception {
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        process = dev.kvpool.testing.ChildProcesses.killOnExit(new ProcessBuilder(java, "-Xmx384m",
                "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
                "-Dkvpool.data-dir=" + dir.resolve("data"), "-Dkvpool.meta.http-port=" + httpPort,
                "-Dkvpool.meta.grpc-port=" + grpcPort, "-Dkvpool.meta.startup-config=" + config,
                "-Dkvpool.meta.write.expiry-period=100ms", "-jar", runnerJar().toString())
                .redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile())).start());
        HttpClient http = HttpClient.newHttpClient();
        long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(90);
        while (true) {
            if (!process.isAlive()) {
                throw new IllegalStateException("metadata plane exited:\n" + tail());
            }
            try {
                HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create(uri() + "/api/getClusterInfo"))
                        .POST(HttpRequest.BodyPublishers.ofString("{\"trace_id\":\"t\"}")).build(),
                        HttpResponse.BodyHandlers.ofString());
                if (r.statusCode() == 200 && r.body().contains("\"OK\"")) {
                    return;
                }
            } catch (IOException e) {
                // not yet listening
            }
            if (System.nanoTime() > end) {
                close();
                throw new IllegalStateException("metadata plane not ready in 90 s:\n" + tail());
            }
            Thread.sleep(100);
        }
    }

    public String uri() {
        return "http://127.0.0.1:" + httpPort;
    }

    public String tail() {
        try {
            List<String> l = Files.readAllLines(log);
            return String.join("\n", l.subList(Math.max(0, l.size() - 30), l.size()));
        } catch (IOException e) {
            return "(no log)";
        }
    }

    static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        }
    }

    /** SIGKILL: the plane is gone at once, as in a crash or a node loss. */
    public void kill() throws InterruptedException {
        process.destroyForcibly();
        process.waitFor(10, TimeUnit.SECONDS);
    }

    @Override
    public void close() throws InterruptedException {
        process.destroy();
        if (!process.waitFor(20, TimeUnit.SECONDS)) {
            process.destroyForcibly();
            process.waitFor(10, TimeUnit.SECONDS);
        }
    }
}
