package dev.kvpool.control.config;

import com.fasterxml.jackson.databind.JsonNode;
import dev.kvpool.control.common.Json;
import dev.kvpool.control.group.GroupService;
import dev.kvpool.control.instance.InstanceService;
import dev.kvpool.control.outbox.Outbox;
import dev.kvpool.control.storage.StorageService;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.inject.Inject;
import jakarta.transaction.Transactional;
import java.time.Instant;
import java.util.List;

/**
 * A consistent copy of the configuration and the outbox position it corresponds to: taken while holding the config
 * revision lock, so no change can commit in between. A consumer applies it, then follows {@code kvpool.config} and
 * skips records whose {@code ce_position} header is ≤ {@code position}.
 */
@ApplicationScoped
public class SnapshotService {
    @Inject
    Outbox outbox;
    @Inject
    StorageService storages;
    @Inject
    GroupService groups;
    @Inject
    InstanceService instances;

    public record Snapshot(String format, long position, Instant takenAt, List<StorageService.StorageView> storages,
                           List<JsonNode> instanceGroups, List<InstanceService.InstanceView> instances) {
    }

    @Transactional
    public Snapshot take() {
        long position = outbox.lock();
        return new Snapshot("kvpool-config-v1", position, Instant.now(),
                storages.list().stream().map(StorageService::view).toList(),
                groups.list().stream().map(g -> GroupService.eventObject(groups.view(g))).toList(),
                instances.list().stream().map(InstanceService::view).toList());
    }

    public String json() {
        return Json.write(take());
    }
}
