package dev.kvpool.control.usage;

import io.quarkus.hibernate.orm.panache.PanacheRepository;
import jakarta.enterprise.context.ApplicationScoped;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

@ApplicationScoped
public class UsageRepository implements PanacheRepository<UsageSample> {
    /** The latest reported bytes per storage type of one group. */
    public Map<String, Long> current(String group) {
        List<UsageSample> latest = getEntityManager().createQuery("select u from UsageSample u where u.groupName = :g "
                + "and u.sampledAt = (select max(v.sampledAt) from UsageSample v where v.groupName = u.groupName "
                + "and v.storageType = u.storageType) order by u.id", UsageSample.class)
                .setParameter("g", group).getResultList();
        Map<String, Long> m = new TreeMap<>();
        latest.forEach(u -> m.put(u.storageType, u.usedBytes));
        return m;
    }
}
