package dev.kvpool.control.storage;

import io.quarkus.hibernate.orm.panache.PanacheRepository;
import io.quarkus.panache.common.Sort;
import jakarta.enterprise.context.ApplicationScoped;
import java.util.List;
import java.util.Optional;

@ApplicationScoped
public class StorageRepository implements PanacheRepository<StorageEntity> {
    public Optional<StorageEntity> byName(String name) {
        return find("name", name).firstResultOptional();
    }

    public List<StorageEntity> sorted() {
        return listAll(Sort.by("name"));
    }
}
