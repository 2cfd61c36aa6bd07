-- Maintenance statements, run by the elected leader (DESIGN.md §6). Each is safe to run twice concurrently.

-- name: leader_try_lock
SELECT pg_try_advisory_lock(hashtextextended(${schema_literal} || '.maintenance', 0)) AS acquired

-- name: leader_unlock
SELECT pg_advisory_unlock(hashtextextended(${schema_literal} || '.maintenance', 0)) AS released

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
