package dev.kvpool.control.group;

import io.quarkus.hibernate.orm.panache.PanacheRepository;
import io.quarkus.panache.common.Sort;
import jakarta.enterprise.context.ApplicationScoped;
import java.util.List;
import java.util.Optional;

@ApplicationScoped
public class GroupRepository implements PanacheRepository<GroupEntity> {
    public Optional<GroupEntity> byName(String name) {
        return find("name", name).firstResultOptional();
    }

    public List<GroupEntity> sorted() {
        return listAll(Sort.by("name"));
    }

    /** Names of the groups that list {@code storage} among their candidates. */
    public List<String> referencing(String storage) {
        return getEntityManager().createQuery("select distinct g.name from GroupEntity g join g.storageCandidates c "
                + "where c = :s order by g.name", String.class).setParameter("s", storage).getResultList();
    }

    /** Names of the groups that list {@code storage} among their event-report candidates. */
    public List<String> referencingForEvents(String storage) {
        return getEntityManager().createQuery("select distinct g.name from GroupEntity g join "
                + "g.eventReportStorageCandidates c where c = :s order by g.name", String.class)
                .setParameter("s", storage).getResultList();
    }
}
