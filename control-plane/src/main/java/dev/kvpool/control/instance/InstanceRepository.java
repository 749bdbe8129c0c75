package dev.kvpool.control.instance;

import io.quarkus.hibernate.orm.panache.PanacheRepository;
import io.quarkus.panache.common.Sort;
import jakarta.enterprise.context.ApplicationScoped;
import java.util.List;
import java.util.Optional;

@ApplicationScoped
public class InstanceRepository implements PanacheRepository<InstanceEntity> {
    public Optional<InstanceEntity> byId(String instanceId) {
        return find("instanceId", instanceId).firstResultOptional();
    }

    public List<InstanceEntity> sorted() {
        return listAll(Sort.by("instanceId"));
    }

    public long countInGroup(String group) {
        return count("group.name", group);
    }
}
