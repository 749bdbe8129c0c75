package dev.kvpool.agent.events;

import dev.kvpool.agent.io.SpoolLog;
import dev.kvpool.api.events.BlockBatch;
import java.nio.file.Path;

/**
 * A child JVM for {@link KafkaEventsIT}: an agent's publisher that cannot reach Kafka, cuts {@code n} one-event
 * batches, says so once they are all spooled, then waits to be killed.
 */
public final class SpoolingAgent {
    private SpoolingAgent() {
    }

    public static void main(String[] args) throws Exception {
        Path dir = Path.of(args[0]);
        int n = Integer.parseInt(args[2]);
        BlockEventPublisher pub = new BlockEventPublisher(args[1], "agent-s", "inst-s", "grp", 1, 5, 10_000,
                SeqFile.open(dir.resolve("events-agent-s.seq")), SpoolLog.open(dir.resolve("events-agent-s.spool")));
        for (int i = 0; i < n; i++) {
            pub.publish(BlockBatch.BlockEvent.removed(new long[] {i}, "disk"));
        }
        while (pub.nextSeq() < n || pub.spooled() < n) {
            Thread.sleep(10);
        }
        System.out.println("SPOOLED " + pub.spooled() + " sent " + pub.sentBatches());
        System.out.flush();
        Thread.sleep(Long.MAX_VALUE);
    }
}
