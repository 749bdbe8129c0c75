package dev.kvpool.testing;

import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Processes the tests start (brokers, Redis servers, packaged planes), killed when the JVM that started them ends
 * without stopping them: a test that forgets to, or a fork stopped on a timeout, would otherwise leave them running
 * with their ports, and the next run's tests would meet them.
 */
public final class ChildProcesses {
    private static final Set<Process> LIVE = ConcurrentHashMap.newKeySet();

    static {
        Runtime.getRuntime().addShutdownHook(new Thread(() -> LIVE.forEach(Process::destroyForcibly),
                "kvpool-test-children"));
    }

    private ChildProcesses() {
    }

    /** {@code p}, to be killed at this JVM's exit if it is still running then. */
    public static Process killOnExit(Process p) {
        LIVE.add(p);
        p.onExit().thenRun(() -> LIVE.remove(p));
        return p;
    }
}
