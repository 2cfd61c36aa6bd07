-- Maintenance statements, run by the elected leader (docs/design/maintenance.md). Each is safe to run twice concurrently.

-- name: leader_try_lock
SELECT pg_try_advisory_lock(hashtextextended(${schema_literal} || '.maintenance', 0)) AS acquired

-- name: leader_unlock
SELECT pg_advisory_unlock(hashtextextended(${schema_literal} || '.maintenance', 0)) AS released

-- name: leader_present
-- Whether any session of this database (this process's leader or another's) holds the leader lock above. pg_locks
-- shows a bigint advisory key as its high half in classid, its low half in objid, and objsubid 1.
SELECT EXISTS (
    SELECT 1 FROM pg_catalog.pg_locks
     WHERE locktype = 'advisory' AND granted AND objsubid = 1
       AND database = (SELECT oid FROM pg_catalog.pg_database WHERE datname = current_database())
       AND ((classid::bigint << 32) | objid::bigint) = hashtextextended(${schema_literal} || '.maintenance', 0)
) AS present

-- name: ping
SELECT 1 AS one

-- name: promote
SELECT ${schema}.promote_due($1::int) AS promoted

-- name: dlq_cleanup
WITH doomed AS (
    SELECT job_id FROM ${schema}.dlq_entries
     WHERE dlq_at < clock_timestamp() - make_interval(secs => $1::double precision)
     ORDER BY dlq_at
     LIMIT $2::int
       FOR UPDATE SKIP LOCKED
)
DELETE FROM ${schema}.dlq_entries d USING doomed WHERE d.job_id = doomed.job_id
RETURNING d.job_id

-- name: rotate
-- By hand (rotateNow): whenever the next slot is free, whatever the cadence.
SELECT ${schema}.rotate_ring($1::text) AS outcome

-- name: rotate_when_due
-- The ring loop's offer: rotate_ring applies the cadence (ring_rotation_due) under the ring lock.
SELECT ${schema}.rotate_ring($1::text, $2::double precision, $3::double precision, $4::bigint) AS outcome

-- name: prune
SELECT ${schema}.prune_ring($1::text, $2::text, $3::int, $4::int) AS outcome

-- name: rescue_stale
SELECT job_id, run_lease, disposition FROM ${schema}.rescue_stale($1::double precision, $2::int, $3::int, $4::boolean)

-- name: rescue_deadlines
SELECT job_id, run_lease, disposition FROM ${schema}.rescue_deadlines($1::int, $2::int, $3::boolean)

-- name: heartbeat
SELECT job_id, run_lease FROM ${schema}.heartbeat($1::int[], $2::bigint[], $3::bigint[], $4::bigint[], $5::jsonb[])

-- name: upgrade_guard
SELECT ${schema}.upgrade_guard() AS legacy_rows

-- name: ring_status
SELECT r.slot, r.generation, ${schema}.ring_slot_count($1::text) AS slot_count,
       ${schema}.ring_sealed_slots($1::text) AS sealed_slots
  FROM ${schema}.ring_cursor($1::text) r

-- name: rescue_leases
SELECT job_id, run_lease, disposition FROM ${schema}.rescue_leases($1::double precision, $2::int, $3::boolean)

-- name: cron_due
-- The schedules the leader evaluates (docs/cron.md): every one not paused. A small control table, read whole.
SELECT name, cron, zone, kind, queue, args::text AS args, priority, max_attempts, catch_up, paused, revision,
       last_fire_at, evaluate_from
  FROM ${schema}.cron_schedules
 WHERE NOT paused
 ORDER BY name

-- name: cron_fire
SELECT o_fire_at AS fire_at, o_job_id AS job_id
  FROM ${schema}.cron_fire($1::text, $2::bigint, $3::timestamptz, $4::timestamptz[])

-- name: renew_limit_leases
SELECT queue, concurrency_limit, concurrency_share, rate_jobs, rate_period_ms, rate_burst, rate_fraction, live_engines
  FROM ${schema}.renew_limit_leases($1::uuid, $2::text[], $3::int[], $4::int)

-- name: release_limit_leases
SELECT ${schema}.release_limit_leases($1::uuid, $2::text[]) AS released
