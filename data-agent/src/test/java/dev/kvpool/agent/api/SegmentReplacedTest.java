package dev.kvpool.agent.api;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.kvpool.api.agent.AgentClient;
import io.quarkus.test.junit.QuarkusTest;
import jakarta.inject.Inject;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/**
 * A client whose mapped segment is no longer the agent's file (the agent stopped cleanly, removing it, and another
 * created a new one at the path) refuses to save or load instead of moving the wrong bytes.
 */
@QuarkusTest
class SegmentReplacedTest {
    @Inject
    AgentService agent;

    @Test
    void aClientNoticesThatTheSegmentWasReplacedOrRemoved() throws Exception {
        Path shm = agent.shm().path();
        Path aside = shm.resolveSibling("shm.aside");
        try (AgentClient c = new AgentClient(AgentResourceTest.BASE, Duration.ofSeconds(10))) {
            assertArrayEquals(new boolean[] {true}, c.save(new long[] {9101}, new long[] {0}));
            Files.move(shm, aside, StandardCopyOption.ATOMIC_MOVE); // the agent keeps its mapping of the old file
            try {
                IllegalStateException gone = assertThrows(IllegalStateException.class,
                        () -> c.save(new long[] {9102}, new long[] {0}));
                assertTrue(gone.getMessage().contains("was removed since this client mapped it"), gone.getMessage());
                Files.write(shm, new byte[4096]); // a new agent's segment at the same path
                IllegalStateException replaced = assertThrows(IllegalStateException.class,
                        () -> c.load(new long[] {9101}, new long[] {0}));
                assertTrue(replaced.getMessage().contains("was replaced since this client mapped it"),
                        replaced.getMessage());
            } finally {
                Files.move(aside, shm, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
            }
            assertTrue(c.load(new long[] {9101}, new long[] {0}).found()[0], "the same file again: served as before");
        }
    }
}
