package dev.kvpool.control.account;

import dev.kvpool.api.auth.BearerToken;
import dev.kvpool.api.events.ConfigEvent;
import dev.kvpool.control.common.ApiException;
import dev.kvpool.control.common.Etags;
import dev.kvpool.control.common.Json;
import dev.kvpool.control.group.GroupRepository;
import dev.kvpool.control.outbox.Outbox;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.inject.Inject;
import jakarta.transaction.Transactional;
import java.time.Instant;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;

/** Accounts. Events and views never carry credentials. */
@ApplicationScoped
public class AccountService {
    public static final List<String> ROLES = List.of(BearerToken.ADMIN, BearerToken.OPERATOR, BearerToken.TENANT);

    @Inject
    AccountRepository repo;
    @Inject
    GroupRepository groups;
    @Inject
    Outbox outbox;

    public record AccountView(String name, String role, Set<String> groups, long version, Instant createdAt,
                              Instant updatedAt) {
    }

    public static AccountView view(AccountEntity a) {
        return new AccountView(a.name, a.role, new TreeSet<>(a.groups), a.version, a.createdAt, a.updatedAt);
    }

    public List<AccountEntity> list() {
        return repo.sorted();
    }

    public AccountEntity get(String name) {
        return repo.byName(name).orElseThrow(() -> ApiException.notFound("account", name));
    }

    /** The account when name and password match; empty otherwise (same answer for unknown names). */
    @Transactional
    public Optional<AccountEntity> authenticate(String name, String password) {
        Optional<AccountEntity> a = name == null ? Optional.empty() : repo.byName(name);
        if (a.isEmpty()) {
            PasswordHasher.verify(password == null ? "" : password, DUMMY); // same work for unknown names
            return Optional.empty();
        }
        return PasswordHasher.verify(password, a.get().passwordHash) ? a : Optional.empty();
    }

    private static final String DUMMY = PasswordHasher.hash("not-a-password-Xx1!");

    @Transactional
    public AccountEntity create(String name, String password, String role, Set<String> groupNames) {
        if (name == null || !name.matches("[A-Za-z0-9][A-Za-z0-9._@-]{0,252}")) {
            throw ApiException.invalid("name", "name '" + name + "' must be 1-253 characters of letters, digits, '.', "
                    + "'_', '@' or '-'");
        }
        String r = role(role);
        String weak = PasswordHasher.weakness(name, password);
        if (weak != null) {
            throw ApiException.invalid("password", weak);
        }
        Set<String> gs = groups(r, groupNames);
        outbox.lock();
        if (repo.byName(name).isPresent()) {
            throw ApiException.duplicate("name", "account '" + name + "' already exists");
        }
        AccountEntity a = new AccountEntity();
        a.name = name;
        a.passwordHash = PasswordHasher.hash(password);
        a.role = r;
        a.groups.addAll(gs);
        a.created();
        repo.persist(a);
        outbox.record(ConfigEvent.ACCOUNT, a.name, ConfigEvent.CREATED, a.version, Json.tree(view(a)));
        return a;
    }

    /** Changes role, groups and/or password (null keeps the current value). */
    @Transactional
    public AccountEntity update(String name, String password, String role, Set<String> groupNames, String ifMatch) {
        outbox.lock();
        AccountEntity a = get(name);
        Etags.check(ifMatch, a.version, true);
        String r = role == null ? a.role : role(role);
        Set<String> gs = groups(r, groupNames == null ? a.groups : groupNames);
        if (password != null) {
            String weak = PasswordHasher.weakness(name, password);
            if (weak != null) {
                throw ApiException.invalid("password", weak);
            }
            a.passwordHash = PasswordHasher.hash(password);
        }
        if (a.role.equals(BearerToken.ADMIN) && !r.equals(BearerToken.ADMIN) && admins() <= 1) {
            throw ApiException.conflict("role", "account '" + name + "' is the last admin; create another admin first");
        }
        a.role = r;
        a.groups.clear();
        a.groups.addAll(gs);
        a.changed();
        outbox.record(ConfigEvent.ACCOUNT, a.name, ConfigEvent.UPDATED, a.version, Json.tree(view(a)));
        return a;
    }

    @Transactional
    public void delete(String name, String ifMatch) {
        outbox.lock();
        AccountEntity a = get(name);
        Etags.check(ifMatch, a.version, false);
        if (a.role.equals(BearerToken.ADMIN) && admins() <= 1) {
            throw ApiException.conflict("name", "account '" + name + "' is the last admin; create another admin first");
        }
        repo.delete(a);
        outbox.record(ConfigEvent.ACCOUNT, name, ConfigEvent.DELETED, a.version + 1, null);
    }

    /** Imports an account with an existing hash (config snapshots); an existing name is left as it is. */
    @Transactional
    public void importHashed(String name, String role, String passwordHash) {
        if (name == null || name.isBlank() || passwordHash == null || !passwordHash.startsWith("pbkdf2-sha256$")) {
            throw ApiException.invalid("accounts", "account '" + name + "' needs user_name and a pbkdf2-sha256 password_hash");
        }
        outbox.lock();
        if (repo.byName(name).isPresent()) {
            return;
        }
        AccountEntity a = new AccountEntity();
        a.name = name;
        a.passwordHash = passwordHash;
        a.role = role(role);
        a.created();
        repo.persist(a);
        outbox.record(ConfigEvent.ACCOUNT, a.name, ConfigEvent.CREATED, a.version, Json.tree(view(a)));
    }

    long admins() {
        return repo.count("role", BearerToken.ADMIN);
    }

    private static String role(String role) {
        String r = role == null ? "" : role.trim().toLowerCase();
        if (!ROLES.contains(r)) {
            throw ApiException.invalid("role", "role must be one of " + ROLES + ", got '" + role + "'");
        }
        return r;
    }

    private Set<String> groups(String role, Set<String> names) {
        Set<String> gs = new TreeSet<>(names == null ? Set.of() : names);
        if (!role.equals(BearerToken.TENANT) && !gs.isEmpty()) {
            throw ApiException.invalid("groups", "only tenant accounts are bound to groups; " + role + " sees all");
        }
        for (String g : gs) {
            if (groups.byName(g).isEmpty()) {
                throw ApiException.invalid("groups", "instance group '" + g + "' does not exist");
            }
        }
        return gs;
    }
}
