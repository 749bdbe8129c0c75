-- Time series for the web console (issue 33), kept without Prometheus. Portable SQL: PostgreSQL 15 and H2 2.x.
-- Buckets are keyed by their start in epoch seconds (bigint), so grouping by any step is integer arithmetic that both
-- databases do alike (t / step * step), and retention compares integers.

-- what the metadata-plane replicas counted per instance, summed per minute (deltas of all replicas added up)
create table stats_minute (
    group_name           varchar(253) not null,
    t                    bigint       not null,
    instance_id          varchar(253) not null,
    queries              bigint       not null,
    queried_blocks       bigint       not null,
    hit_blocks           bigint       not null,
    written_blocks       bigint       not null,
    evicted_water_level  bigint       not null,
    evicted_type_water   bigint       not null,
    evicted_key_count    bigint       not null,
    evicted_ttl          bigint       not null,
    primary key (group_name, t, instance_id)
);
create index ix_stats_minute_t on stats_minute (t);

-- minute buckets past kvpool.control.stats.minute-retention, rolled up per hour (same columns, t = hour start)
create table stats_hour (
    group_name           varchar(253) not null,
    t                    bigint       not null,
    instance_id          varchar(253) not null,
    queries              bigint       not null,
    queried_blocks       bigint       not null,
    hit_blocks           bigint       not null,
    written_blocks       bigint       not null,
    evicted_water_level  bigint       not null,
    evicted_type_water   bigint       not null,
    evicted_key_count    bigint       not null,
    evicted_ttl          bigint       not null,
    primary key (group_name, t, instance_id)
);
create index ix_stats_hour_t on stats_hour (t);

-- one row; stats writes (reports, roll-ups) lock it first, so the add-or-insert of a bucket never races another
create table stats_lock (
    id integer primary key
);
insert into stats_lock (id) values (1);

-- the metadata-plane replicas as their last stats report described them (GET /api/v1/services)
create table service_replica (
    replica_id   varchar(253)  not null primary key,
    kind         varchar(16)   not null,
    url          varchar(2048),
    leader       boolean       not null,
    store        varchar(32),
    version      varchar(64),
    started_at   timestamp(6) with time zone,
    instances    bigint        not null,
    keys_count   bigint        not null,
    period_s     integer       not null,
    last_seen    timestamp(6) with time zone not null
);
