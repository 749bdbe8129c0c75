package dev.kvpool.control.account;

import jakarta.persistence.CollectionTable;
import jakarta.persistence.Column;
import jakarta.persistence.ElementCollection;
import dev.kvpool.control.common.VersionedEntity;
import jakarta.persistence.Entity;
import jakarta.persistence.FetchType;
import jakarta.persistence.JoinColumn;
import jakarta.persistence.Table;
import java.util.Set;
import java.util.TreeSet;

/** An account: a salted PBKDF2 hash (never the password), a role, and for a tenant the groups it is bound to. */
@Entity
@Table(name = "account")
public class AccountEntity extends VersionedEntity {
    @Column(nullable = false)
    public String name;
    @Column(name = "password_hash", nullable = false)
    public String passwordHash;
    @Column(nullable = false)
    public String role;
    /** A disabled account can neither sign in nor use tokens issued before it was disabled. */
    @Column(nullable = false)
    public boolean disabled;

    @ElementCollection(fetch = FetchType.EAGER)
    @CollectionTable(name = "account_group", joinColumns = @JoinColumn(name = "account_id"))
    @Column(name = "group_name", nullable = false)
    public Set<String> groups = new TreeSet<>();
}
