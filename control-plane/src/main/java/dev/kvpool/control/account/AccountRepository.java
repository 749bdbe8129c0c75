package dev.kvpool.control.account;

import io.quarkus.hibernate.orm.panache.PanacheRepository;
import io.quarkus.panache.common.Sort;
import jakarta.enterprise.context.ApplicationScoped;
import java.util.List;
import java.util.Optional;

@ApplicationScoped
public class AccountRepository implements PanacheRepository<AccountEntity> {
    public Optional<AccountEntity> byName(String name) {
        return find("name", name).firstResultOptional();
    }

    public List<AccountEntity> sorted() {
        return listAll(Sort.by("name"));
    }
}
