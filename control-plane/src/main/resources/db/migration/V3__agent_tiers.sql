-- Data agents report to the control plane too (POST /api/v1/services/heartbeat): their rows in service_replica have
-- kind 'agent' and carry their tiers as JSON ({"<tier>": {"capacityBytes", "usedBytes", "blocks"}}, at most 16
-- tiers, validated before it is written). Portable SQL: PostgreSQL 15 and H2 2.x.
alter table service_replica add column tiers varchar(8192);
