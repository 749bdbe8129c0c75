package dev.kvpool.agent.api;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.kvpool.agent.io.DirLock;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The shared segment's life: created, taken over after a kill, refused to a second agent, removed at a clean stop. */
class SharedMemoryTest {
    @TempDir
    Path dir;

    @Test
    void aCleanStopRemovesTheSegmentItCreated() {
        Path p = dir.resolve("shm");
        SharedMemory m = new SharedMemory(p, 1 << 20);
        assertFalse(m.takenOver());
        assertTrue(m.mapped());
        assertEquals(1 << 20, p.toFile().length());
        m.close();
        assertFalse(Files.exists(p), "the segment file is gone after close");
        assertFalse(m.mapped());
        m.close(); // twice is harmless
    }

    @Test
    void aSegmentLeftByAKilledAgentIsTakenOverInPlace() throws Exception {
        Path p = dir.resolve("shm");
        // what a kill -9 leaves: the file, its bytes, no lock
        Files.write(p, new byte[1 << 20]);
        try (var ch = java.nio.channels.FileChannel.open(p, java.nio.file.StandardOpenOption.WRITE)) {
            ch.write(java.nio.ByteBuffer.wrap(new byte[] {42}), 4096);
        }
        Object inode = Files.readAttributes(p, BasicFileAttributes.class).fileKey();
        SharedMemory m = new SharedMemory(p, 1 << 20);
        assertTrue(m.takenOver());
        // the same file (an engine that kept its mapping still shares it), its bytes as they were
        assertEquals(inode, Files.readAttributes(p, BasicFileAttributes.class).fileKey());
        assertEquals(42, m.segment().get(ValueLayout.JAVA_BYTE, 4096));
        m.close();
        assertFalse(Files.exists(p));
    }

    @Test
    void aSecondAgentOnTheSamePathIsRefusedAndTouchesNothing() throws Exception {
        Path p = dir.resolve("shm");
        SharedMemory first = new SharedMemory(p, 1 << 20);
        first.segment().set(ValueLayout.JAVA_LONG, 0, 0x1234L);
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> new SharedMemory(p, 2 << 20));
        assertTrue(e.getMessage().contains("is in use by another agent"), e.getMessage());
        assertEquals(1 << 20, p.toFile().length(), "the running agent's segment keeps its size");
        assertEquals(0x1234L, first.segment().get(ValueLayout.JAVA_LONG, 0));
        first.close();
        SharedMemory next = new SharedMemory(p, 2 << 20); // free again once the first stopped
        assertFalse(next.takenOver());
        next.close();
    }

    @Test
    void oneAgentPerDataDirectoryNamingTheHolder() throws Exception {
        try (DirLock l = DirLock.acquire(dir, "kvpool.agent.data-dir")) {
            assertEquals(ProcessHandle.current().pid() + "\n", Files.readString(l.path()));
            IllegalStateException e = assertThrows(IllegalStateException.class,
                    () -> DirLock.acquire(dir, "kvpool.agent.data-dir"));
            assertEquals("kvpool.agent.data-dir " + dir.toAbsolutePath() + " is in use by another agent (pid "
                    + ProcessHandle.current().pid() + "): stop it, or give this one another kvpool.agent.data-dir",
                    e.getMessage());
            assertEquals(ProcessHandle.current().pid() + "\n", Files.readString(l.path()), "the holder's file as it was");
        }
        try (DirLock again = DirLock.acquire(dir, "kvpool.agent.data-dir")) {
            assertTrue(Files.exists(again.path()));
        }
    }
}
