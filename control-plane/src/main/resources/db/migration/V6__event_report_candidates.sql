-- issue 36: an instance group's event-report storages (where engines report their own caches; no bytes live there)
create table group_event_report_candidate (
    group_id     bigint       not null references instance_group (id),
    position     integer      not null,
    storage_name varchar(253) not null,
    primary key (group_id, position)
);
