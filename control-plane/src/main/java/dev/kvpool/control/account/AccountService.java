package dev.kvpool.control.account;

import dev.kvpool.api.auth.BearerToken;
import dev.kvpool.api.events.ConfigEvent;
import dev.kvpool.api.limits.Limits;
import dev.kvpool.api.naming.Identifiers;
import dev.kvpool.control.common.ApiException;
import dev.kvpool.control.common.Etags;
import dev.kvpool.control.common.Inputs;
import dev.kvpool.control.common.Json;
import dev.kvpool.control.group.GroupRepository;
import dev.kvpool.control.outbox.Outbox;
import dev.kvpool.control.security.TokenRevocations;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.inject.Inject;
import jakarta.transaction.Transactional;
import org.eclipse.microprofile.config.inject.ConfigProperty;
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
    @Inject
    TokenRevocations revocations;

    public record AccountView(String name, String role, Set<String> groups, boolean disabled, long version,
                              Instant createdAt, Instant updatedAt) {
    }

    public static AccountView view(AccountEntity a) {
        return new AccountView(a.name, a.role, new TreeSet<>(a.groups), a.disabled, a.version, a.createdAt, a.updatedAt);
    }

    public List<AccountEntity> list() {
        return repo.sorted();
    }

    public AccountEntity get(String name) {
        Inputs.name(Identifiers.Kind.ACCOUNT, "name", name);
        return repo.byName(name).orElseThrow(() -> ApiException.notFound("account", name));
    }

    /** The account when name and password match; empty otherwise (same answer for unknown names). */
    @Transactional
    public Optional<AccountEntity> authenticate(String name, String password) {
        // a name no account can have (a NUL from a Basic header, say) is not looked up: the database would refuse it
        boolean plausible = Identifiers.valid(Identifiers.Kind.ACCOUNT, name) && password != null
                && password.length() <= MAX_PASSWORD;
        Optional<AccountEntity> a = plausible ? repo.byName(name) : Optional.empty();
        if (a.isEmpty()) {
            PasswordHasher.verify(password == null ? "" : password, DUMMY); // same work for unknown names
            return Optional.empty();
        }
        // a disabled account is refused with the same answer as a wrong password (after the same work)
        return PasswordHasher.verify(password, a.get().passwordHash) && !a.get().disabled ? a : Optional.empty();
    }

    private static final String DUMMY = PasswordHasher.hash("not-a-password-Xx1!");
    /** Characters of a password (a longer one is refused, never hashed). */
    public static final int MAX_PASSWORD = Limits.MAX_TEXT;

    /**
     * How strong a new password must be. {@code strict} (default): {@link PasswordHasher#weakness}. {@code kvcm}:
     * KVCM's AddAccount rule (§3.12, "password may be empty"), for admin scripts written against KVCM; the length
     * bound stays, and the password is still stored as a salted hash.
     */
    public enum PasswordPolicy {
        STRICT, KVCM
    }

    @ConfigProperty(name = "kvpool.control.accounts.password-policy", defaultValue = "strict")
    PasswordPolicy passwordPolicy;

    public PasswordPolicy passwordPolicy() {
        return passwordPolicy;
    }

    /** The password to hash, or a refusal naming what is wrong. */
    private String password(String name, String password) {
        if (password != null && password.length() > MAX_PASSWORD) {
            throw ApiException.invalid("password", "password must be at most " + MAX_PASSWORD + " characters");
        }
        if (passwordPolicy == PasswordPolicy.KVCM) {
            return password == null ? "" : password; // KVCM's proto3 default: an absent password is the empty one
        }
        String weak = PasswordHasher.weakness(name, password);
        if (weak != null) {
            throw ApiException.invalid("password", weak + " (kvpool.control.accounts.password-policy=strict)");
        }
        return password;
    }

    @Transactional
    public AccountEntity create(String name, String password, String role, Set<String> groupNames) {
        Inputs.name(Identifiers.Kind.ACCOUNT, "name", name);
        String r = role(role);
        String pw = password(name, password);
        Set<String> gs = groups(r, groupNames);
        outbox.lock();
        if (repo.byName(name).isPresent()) {
            throw ApiException.duplicate("name", "account '" + name + "' already exists");
        }
        AccountEntity a = new AccountEntity();
        a.name = name;
        a.passwordHash = PasswordHasher.hash(pw);
        a.role = r;
        a.groups.addAll(gs);
        a.created();
        repo.persist(a);
        outbox.record(ConfigEvent.ACCOUNT, a.name, ConfigEvent.CREATED, a.version, Json.tree(view(a)));
        return a;
    }

    public AccountEntity update(String name, String password, String role, Set<String> groupNames, String ifMatch) {
        return update(name, password, role, groupNames, null, ifMatch);
    }

    /**
     * Changes role, groups, password and/or the disabled flag (null keeps the current value). Disabling, or changing
     * role or groups, revokes the account's earlier tokens on every plane (their rights were those of before).
     */
    @Transactional
    public AccountEntity update(String name, String password, String role, Set<String> groupNames, Boolean disabled,
                                String ifMatch) {
        outbox.lock();
        AccountEntity a = get(name);
        Etags.check(ifMatch, a.version, true);
        String r = role == null ? a.role : role(role);
        Set<String> gs = groups(r, groupNames == null ? a.groups : groupNames);
        if (password != null) {
            a.passwordHash = PasswordHasher.hash(password(name, password));
        }
        if (a.role.equals(BearerToken.ADMIN) && !r.equals(BearerToken.ADMIN) && admins() <= 1) {
            throw ApiException.conflict("role", "account '" + name + "' is the last admin; create another admin first");
        }
        boolean disabling = Boolean.TRUE.equals(disabled) && !a.disabled;
        if (disabling && a.role.equals(BearerToken.ADMIN) && enabledAdmins() <= 1) {
            throw ApiException.conflict("disabled", "account '" + name + "' is the last enabled admin; "
                    + "enable or create another admin first");
        }
        if (disabling || !r.equals(a.role) || !gs.equals(new TreeSet<>(a.groups))) {
            revocations.revokeSubject(name);
        }
        if (disabled != null) {
            a.disabled = disabled;
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
        Inputs.existingName(Identifiers.Kind.ACCOUNT, "name", name);
        outbox.lock();
        AccountEntity a = repo.byName(name).orElseThrow(() -> ApiException.notFound("account", name));
        Etags.check(ifMatch, a.version, false);
        if (a.role.equals(BearerToken.ADMIN) && admins() <= 1) {
            throw ApiException.conflict("name", "account '" + name + "' is the last admin; create another admin first");
        }
        repo.delete(a);
        revocations.revokeSubject(name); // its tokens, on every plane; a new account of this name gets new ones
        outbox.record(ConfigEvent.ACCOUNT, name, ConfigEvent.DELETED, a.version + 1, null);
    }

    /** Imports an account with an existing hash (config snapshots); an existing name is left as it is. */
    @Transactional
    public void importHashed(String name, String role, String passwordHash) {
        Inputs.name(Identifiers.Kind.ACCOUNT, "accounts.user_name", name);
        if (!PasswordHasher.wellFormed(passwordHash)) {
            throw ApiException.invalid("accounts.password_hash", "account '" + name + "' needs a password_hash of the "
                    + "form pbkdf2-sha256$<iterations " + PasswordHasher.MIN_ITERATIONS + "-"
                    + PasswordHasher.MAX_ITERATIONS + ">$<base64 salt>$<base64 32-byte hash>");
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

    /** Groups a tenant may be bound to (they travel in every token). */
    public static final int MAX_GROUPS = 1024;

    long admins() {
        return repo.count("role", BearerToken.ADMIN);
    }

    private long enabledAdmins() {
        return repo.count("role = ?1 and disabled = false", BearerToken.ADMIN);
    }

    private static String role(String role) {
        String r = role == null ? "" : role.trim().toLowerCase();
        if (!ROLES.contains(r)) {
            throw ApiException.invalid("role", "role must be one of " + ROLES + ", got '" + role + "'");
        }
        return r;
    }

    private Set<String> groups(String role, Set<String> names) {
        Set<String> gs = new TreeSet<>();
        if (names != null) {
            if (names.size() > MAX_GROUPS) {
                throw ApiException.invalid("groups", "groups may hold at most " + MAX_GROUPS + " entries, got " + names.size());
            }
            for (String g : names) {
                gs.add(Inputs.name(Identifiers.Kind.GROUP, "groups", g));
            }
        }
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
