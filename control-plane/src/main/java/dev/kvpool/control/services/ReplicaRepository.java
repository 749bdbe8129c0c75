package dev.kvpool.control.services;

import io.quarkus.hibernate.orm.panache.PanacheRepositoryBase;
import io.quarkus.panache.common.Sort;
import jakarta.enterprise.context.ApplicationScoped;
import java.util.List;

@ApplicationScoped
public class ReplicaRepository implements PanacheRepositoryBase<ReplicaEntity, String> {
    public List<ReplicaEntity> sorted(String kind) {
        return list("kind", Sort.by("id"), kind);
    }
}
