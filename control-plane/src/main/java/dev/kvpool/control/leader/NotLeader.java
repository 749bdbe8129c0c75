package dev.kvpool.control.leader;

import io.quarkus.scheduler.Scheduled;
import io.quarkus.scheduler.ScheduledExecution;
import jakarta.inject.Inject;
import jakarta.inject.Singleton;

/** {@code @Scheduled(skipExecutionIf = NotLeader.class)}: work that must run once across replicas runs on the leader. */
@Singleton
public class NotLeader implements Scheduled.SkipPredicate {
    @Inject
    Leadership leadership;

    @Override
    public boolean test(ScheduledExecution execution) {
        return !leadership.isLeader();
    }
}
