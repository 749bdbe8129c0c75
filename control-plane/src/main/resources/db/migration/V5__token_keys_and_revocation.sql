-- Bearer tokens become JWTs (issue 34 part 4): several signing keys named by kid, one active; revocations that
-- every replica and every metadata plane polls. Times are epoch milliseconds (bigint) so the same statements run on
-- H2 and PostgreSQL without time-zone conversions.

-- the single home-made-format key goes: tokens in the old format are not accepted any more, so it has no use
drop table signing_key;

create table token_signing_key (
    kid         varchar(64)   primary key,
    algorithm   varchar(16)   not null,
    private_key varchar(4096) not null,
    public_key  varchar(4096) not null,
    created_ms  bigint        not null,
    -- set when another key became active; the key stays in the JWKS until every token it signed has expired
    retired_ms  bigint
);

-- one row, locked (select ... for update) by whoever creates or rotates keys, so replicas never make two active keys
create table token_key_lock (id integer primary key);
insert into token_key_lock (id) values (1);

-- signed-out tokens by jti, kept until the token's own expiry
create table token_revocation (
    jti        varchar(128) primary key,
    subject    varchar(253) not null,
    expires_ms bigint       not null,
    changed_ms bigint       not null
);
create index ix_token_revocation_changed on token_revocation (changed_ms);

-- per account: tokens issued (iat, epoch seconds) before not_before_s are refused; set when the account is
-- disabled, deleted or its role or groups change; kept until the longest token issued before it has expired
create table token_cutoff (
    subject      varchar(253) primary key,
    not_before_s bigint       not null,
    expires_ms   bigint       not null,
    changed_ms   bigint       not null
);
create index ix_token_cutoff_changed on token_cutoff (changed_ms);

alter table account add column disabled boolean default false not null;
