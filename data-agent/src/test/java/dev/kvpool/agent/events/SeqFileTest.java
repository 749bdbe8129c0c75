package dev.kvpool.agent.events;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** seq goes on after a clean stop, jumps past everything possibly used after a crash, never repeats. */
class SeqFileTest {
    @TempDir
    Path dir;

    @Test
    void aCleanStopContinuesExactlyACrashSkipsToTheReservation() throws Exception {
        Path f = dir.resolve("events-a.seq");
        SeqFile first = SeqFile.open(f);
        assertEquals(0, first.first());
        for (long next = 1; next <= 5000; next++) { // crosses one reservation
            first.advanced(next);
        }
        first.closed(5000);
        SeqFile second = SeqFile.open(f);
        assertTrue(second.cleanBefore());
        assertEquals(5000, second.first(), "no gap after a clean stop");
        second.advanced(5001);
        second.advanced(5002);
        // the process dies here: no closed()
        SeqFile third = SeqFile.open(f);
        assertFalse(third.cleanBefore());
        assertTrue(third.first() > 5002, "never a seq a crashed run may have used: " + third.first());
        assertEquals(5000 + SeqFile.RESERVE, third.first());
        third.advanced(third.first() + 1);
        assertFalse(Files.exists(dir.resolve("events-a.seq.tmp")), "written through a temp file and a rename");
    }

    @Test
    void anUnreadableFileIsAnErrorNamingIt() throws Exception {
        Path f = dir.resolve("events-b.seq");
        Files.writeString(f, "next=abc\nclean=true\n");
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> SeqFile.open(f));
        assertTrue(e.getMessage().contains(f.toString()), e.getMessage());
    }
}
