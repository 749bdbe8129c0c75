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

    /** The names among {@code names} that no storage has, in their order (a group's pending candidates). */
    public List<String> missing(java.util.Collection<String> names) {
        if (names.isEmpty()) {
            return List.of();
        }
        java.util.Set<String> present = new java.util.HashSet<>(getEntityManager()
                .createQuery("select s.name from StorageEntity s where s.name in :n", String.class)
                .setParameter("n", names).getResultList());
        return names.stream().filter(n -> !present.contains(n)).toList();
    }

    public List<StorageEntity> sorted() {
        return listAll(Sort.by("name"));
    }
}
