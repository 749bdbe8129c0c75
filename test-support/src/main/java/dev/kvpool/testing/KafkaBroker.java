package dev.kvpool.testing;

import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.UUID;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.common.errors.TopicExistsException;

/**
 * A real single-node KRaft Kafka broker (kafka_2.13 4.1.1) in a child JVM. The broker keeps its port and log
 * directory across {@link #stop()} / {@link #start()}, so a test can take Kafka away under a producer and bring
 * it back at the same address with its data. A child JVM (not the in-process test kit) because only a process
 * can be killed and restarted cleanly, and it keeps the broker's logging and classes out of the test's JVM.
 */
public final class KafkaBroker implements AutoCloseable {
    private final Path dir;
    private final int port;
    private final int controllerPort;
    private Process process;

    /** Formats a fresh log directory under {@code dir} and picks two free ports; call {@link #start()}. */
    public KafkaBroker(Path dir) {
        this.dir = dir;
        this.port = freePort();
        this.controllerPort = freePort();
        try {
            Files.createDirectories(dir);
            Files.writeString(dir.resolve("server.properties"), String.join("\n",
                    "process.roles=broker,controller",
                    "node.id=1",
                    "controller.quorum.bootstrap.servers=127.0.0.1:" + controllerPort,
                    "listeners=PLAINTEXT://127.0.0.1:" + port + ",CONTROLLER://127.0.0.1:" + controllerPort,
                    "advertised.listeners=PLAINTEXT://127.0.0.1:" + port,
                    "controller.listener.names=CONTROLLER",
                    "listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
                    "log.dirs=" + dir.resolve("logs"),
                    "num.partitions=1",
                    "offsets.topic.replication.factor=1",
                    "transaction.state.log.replication.factor=1",
                    "transaction.state.log.min.isr=1",
                    "group.initial.rebalance.delay.ms=0",
                    "auto.create.topics.enable=true", ""));
            run("kafka.tools.StorageTool", "format", "-t", UUID.randomUUID().toString().replace("-", "").substring(0, 22),
                    "-c", dir.resolve("server.properties").toString(), "--standalone");
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Starts a broker in a fresh temporary directory and waits until it accepts clients. */
    public static KafkaBroker started() {
        try {
            KafkaBroker b = new KafkaBroker(Files.createTempDirectory("kvpool-kafka-"));
            b.start();
            return b;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    public String bootstrapServers() {
        return "127.0.0.1:" + port;
    }

    public int port() {
        return port;
    }

    public boolean running() {
        return process != null && process.isAlive();
    }

    /** Starts (or restarts) the broker on the same port and data, and waits until it serves metadata. */
    public synchronized void start() {
        if (running()) {
            return;
        }
        try {
            List<String> cmd = javaCommand("-Xmx512m", "kafka.Kafka", dir.resolve("server.properties").toString());
            process = ChildProcesses.killOnExit(new ProcessBuilder(cmd).redirectErrorStream(true)
                    .redirectOutput(ProcessBuilder.Redirect.appendTo(dir.resolve("broker.log").toFile())).start());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        awaitReady(Duration.ofSeconds(60));
    }

    /** Kills the broker (SIGKILL: no controlled shutdown) and waits until its port is closed. */
    public synchronized void stop() {
        if (process == null) {
            return;
        }
        process.destroyForcibly();
        try {
            process.waitFor(30, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        process = null;
        long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (System.nanoTime() < until && listening(port)) {
            sleep(50);
        }
    }

    /** Creates topics (single partition unless given) and waits for them; existing topics are fine. */
    public void createTopics(String... topics) {
        try (Admin admin = admin()) {
            var list = new ArrayList<NewTopic>();
            for (String t : topics) {
                list.add(new NewTopic(t, 1, (short) 1));
            }
            for (var f : admin.createTopics(list).values().values()) {
                try {
                    f.get(30, TimeUnit.SECONDS);
                } catch (ExecutionException e) {
                    if (!(e.getCause() instanceof TopicExistsException)) {
                        throw new IllegalStateException(e.getCause());
                    }
                }
            }
        } catch (Exception e) {
            throw e instanceof RuntimeException r ? r : new IllegalStateException(e);
        }
    }

    public Admin admin() {
        Properties p = new Properties();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers());
        p.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, 10_000);
        p.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 20_000);
        return Admin.create(p);
    }

    /** The broker's own log (stdout and stderr), for failure messages. */
    public Path logFile() {
        return dir.resolve("broker.log");
    }

    @Override
    public void close() {
        stop();
    }

    private void awaitReady(Duration timeout) {
        long until = System.nanoTime() + timeout.toNanos();
        Exception last = null;
        while (System.nanoTime() < until) {
            if (!running()) {
                throw new IllegalStateException("Kafka broker exited with " + process.exitValue() + "; see " + logFile());
            }
            if (listening(port)) {
                try (Admin admin = admin()) {
                    admin.describeCluster().nodes().get(5, TimeUnit.SECONDS);
                    return;
                } catch (Exception e) {
                    last = e;
                }
            }
            sleep(100);
        }
        throw new IllegalStateException("Kafka broker not ready after " + timeout + "; see " + logFile(), last);
    }

    private void run(String mainClass, String... args) throws IOException {
        List<String> cmd = javaCommand("-Xmx256m", mainClass, args);
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.appendTo(dir.resolve("format.log").toFile())).start();
        try {
            if (!p.waitFor(120, TimeUnit.SECONDS) || p.exitValue() != 0) {
                throw new IOException(mainClass + " failed; see " + dir.resolve("format.log"));
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException(e);
        }
    }

    private static List<String> javaCommand(String heap, String mainClass, String... args) {
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        var cmd = new ArrayList<>(List.of(java, heap, "-cp", brokerClassPath(), mainClass));
        cmd.addAll(List.of(args));
        return cmd;
    }

    /** The test JVM's class path holds kafka_2.13 and its dependencies (this module brings them). */
    private static String brokerClassPath() {
        String cp = System.getProperty("java.class.path");
        String surefire = System.getProperty("surefire.test.class.path");
        if (surefire != null && !surefire.isEmpty()) {
            cp = surefire;
        }
        var keep = new ArrayList<String>();
        for (String e : cp.split(File.pathSeparator)) {
            if (!e.isEmpty()) {
                keep.add(e);
            }
        }
        return String.join(File.pathSeparator, keep);
    }

    private static boolean listening(int port) {
        try (Socket s = new Socket()) {
            s.connect(new InetSocketAddress("127.0.0.1", port), 200);
            return true;
        } catch (IOException e) {
            return false;
        }
    }

    private static int freePort() {
        try (ServerSocket s = new ServerSocket(0)) {
            s.setReuseAddress(true);
            return s.getLocalPort();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }
}
