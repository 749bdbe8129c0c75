-- Leader election among control-plane replicas (issue 34): one lease row, written with the database's clock.
-- holder is null while nobody leads (released on demote/shutdown); epoch grows with every new term and is the
-- fencing token; expires_at_ms / renewed_at_ms are epoch milliseconds of the DATABASE's clock, so the replicas'
-- clocks never decide who leads. Portable SQL (PostgreSQL and H2).
create table leader_lease (
    name          varchar(64)  not null primary key,
    holder        varchar(255),
    epoch         bigint       not null,
    expires_at_ms bigint       not null,
    renewed_at_ms bigint       not null
);

insert into leader_lease (name, holder, epoch, expires_at_ms, renewed_at_ms) values ('control-plane', null, 0, 0, 0);
