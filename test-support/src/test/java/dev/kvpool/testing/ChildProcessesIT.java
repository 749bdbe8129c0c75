package dev.kvpool.testing;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

class ChildProcessesIT {

    /** A JVM that starts a long child and ends without stopping it; {@code args[0]}: whether it registers it. */
    public static final class Parent {
        public static void main(String[] args) throws Exception {
            Process p = new ProcessBuilder("sleep", "300").start();
            if (Boolean.parseBoolean(args[0])) {
                ChildProcesses.killOnExit(p);
            }
            System.out.println(p.pid());
            System.out.flush();
            System.exit(0);
        }
    }

    static long orphanOf(boolean registered) throws Exception {
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        Process parent = new ProcessBuilder(java, "-cp", System.getProperty("java.class.path"), Parent.class.getName(),
                Boolean.toString(registered)).redirectErrorStream(true).start();
        long pid;
        try (var r = new BufferedReader(new InputStreamReader(parent.getInputStream()))) {
            pid = Long.parseLong(r.readLine().trim());
        }
        assertTrue(parent.waitFor(30, TimeUnit.SECONDS));
        assertEquals(0, parent.exitValue());
        return pid;
    }

    static boolean aliveAfter(long pid, long millis) throws InterruptedException {
        long end = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(millis);
        while (System.nanoTime() < end) {
            if (ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false)) {
                Thread.sleep(50);
            } else {
                return false;
            }
        }
        return true;
    }

    @Test
    void aRegisteredChildDiesWithTheJvmThatStartedIt() throws Exception {
        long unregistered = orphanOf(false);
        try {
            assertTrue(aliveAfter(unregistered, 1000), "without registration the child outlives its JVM");
        } finally {
            ProcessHandle.of(unregistered).ifPresent(ProcessHandle::destroyForcibly);
        }
        long registered = orphanOf(true);
        assertFalse(aliveAfter(registered, 10_000), "killed at its JVM's exit");
    }
}
