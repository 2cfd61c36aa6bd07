-- Admin reads. These scan backlogs; never call them on a dispatch path.

-- name: schema_contract
-- Whether the schema states a function contract at all (docs/adr/0007); contract_version reads it.
SELECT to_regprocedure(${schema_literal} || '.contract_version()') IS NOT NULL AS present

-- name: contract_version
SELECT ${schema}.contract_version() AS version

-- name: counts
WITH heads AS MATERIALIZED (
    SELECT h.queue, h.priority, h.enqueue_shard, ${schema}.seq_next(h.seq_name) AS cursor
      FROM ${schema}.queue_claim_heads h
     WHERE h.queue = $1
),
avail AS (
    SELECT count(*) AS n
      FROM ${schema}.ready_entries r
      JOIN heads h ON h.queue = r.queue AND h.priority = r.priority AND h.enqueue_shard = r.enqueue_shard
     WHERE r.queue = $1 AND r.lane_seq >= h.cursor
       AND NOT EXISTS (SELECT 1 FROM ${schema}.ready_tombstones t
                        WHERE t.ready_slot = r.ready_slot AND t.ready_generation = r.ready_generation
                          AND t.queue = r.queue AND t.priority = r.priority AND t.enqueue_shard = r.enqueue_shard
                          AND t.lane_seq = r.lane_seq)
       AND NOT EXISTS (SELECT 1 FROM ${schema}.ready_claim_attempt_batches e
                        WHERE e.ready_slot = r.ready_slot AND e.ready_generation = r.ready_generation
                          AND e.queue = r.queue AND e.priority = r.priority AND e.enqueue_shard = r.enqueue_shard
                          AND e.first_lane_seq <= r.lane_seq AND e.next_lane_seq > r.lane_seq
                          AND e.lane_ranges @> r.lane_seq)
),
open_claims AS (
    SELECT count(*) AS n
      FROM ${schema}.lease_claim_batches b
     CROSS JOIN LATERAL unnest(b.receipt_ids) AS i(receipt_id)
     WHERE b.queue = $1
       AND NOT EXISTS (SELECT 1 FROM ${schema}.lease_claim_closure_batches c
                        WHERE c.claim_slot = b.claim_slot AND c.receipt_ranges @> i.receipt_id)
),
completed AS (
    -- Retained history plus what prune folded into the append-only rollup ledger, so counts survive truncation.
    SELECT coalesce((SELECT sum(completed_count) FROM ${schema}.receipt_completion_batches WHERE queue = $1), 0)
         + (SELECT count(*) FROM ${schema}.done_entries WHERE queue = $1 AND state = 'completed')
         + coalesce((SELECT sum(pruned_completed_count) FROM ${schema}.queue_terminal_rollups WHERE queue = $1), 0)
         + coalesce((SELECT sum(pruned_completed_delta) FROM ${schema}.queue_terminal_rollup_deltas WHERE queue = $1), 0) AS n
),
scheduled AS (
    SELECT count(*) AS n FROM ${schema}.deferred_jobs WHERE queue = $1
)
SELECT avail.n AS available, open_claims.n AS in_flight, completed.n AS completed, scheduled.n AS scheduled,
       coalesce((SELECT m.paused FROM ${schema}.queue_meta m WHERE m.queue = $1), false) AS paused
  FROM avail, open_claims, completed, scheduled

-- name: queue_pause
SELECT ${schema}.pause_queue($1::text, $2::text) AS changed

-- name: queue_resume
SELECT ${schema}.resume_queue($1::text) AS changed

-- name: cancel
SELECT ${schema}.cancel_job($1::bigint) AS result

-- name: cancel_unique
-- Cancel the job holding a unique key, derived the way enqueue derives it (docs/unique-jobs.md).
SELECT c.job_id, c.result
  FROM ${schema}.cancel_unique(${schema}.unique_key_of($1::text, $2::text, $3::jsonb, $4::jsonb, $5::text, $6::bigint,
                                                       now())) AS c

-- name: dlq_list
SELECT job_id, queue, kind, args::text AS args, attempt, run_lease, dlq_reason, payload::text AS payload, dlq_at
  FROM ${schema}.dlq_entries
 WHERE queue = $1 AND job_id > $2::bigint
 ORDER BY job_id
 LIMIT $3::int

-- name: dlq_retry
SELECT j AS job_id FROM ${schema}.dlq_retry($1::bigint[]) AS j

-- name: dlq_match
SELECT job_id FROM ${schema}.dlq_entries
 WHERE ($1::text IS NULL OR queue = $1) AND ($2::text IS NULL OR kind = $2)
 ORDER BY job_id
 LIMIT $3::int

-- name: dlq_purge
DELETE FROM ${schema}.dlq_entries WHERE job_id = ANY ($1::bigint[]) RETURNING job_id

-- name: progress
SELECT coalesce(
         (SELECT a.progress::text FROM ${schema}.attempt_state a WHERE a.job_id = $1 ORDER BY a.run_lease DESC LIMIT 1),
         (SELECT (d.payload -> 'progress')::text FROM ${schema}.deferred_jobs d WHERE d.job_id = $1),
         (SELECT (r.payload -> 'progress')::text FROM ${schema}.ready_entries r WHERE r.job_id = $1
           ORDER BY r.run_lease DESC, r.ready_generation DESC, r.lane_seq DESC LIMIT 1)) AS progress

-- name: queue_dlq_policy
INSERT INTO ${schema}.queue_meta (queue, dlq_enabled) VALUES ($1, $2::boolean)
ON CONFLICT (queue) DO UPDATE SET dlq_enabled = excluded.dlq_enabled
 WHERE ${schema}.queue_meta.dlq_enabled IS DISTINCT FROM excluded.dlq_enabled

-- name: queue_enqueue_shards
INSERT INTO ${schema}.queue_meta (queue, enqueue_shards) VALUES ($1, $2::smallint)
ON CONFLICT (queue) DO UPDATE SET enqueue_shards = excluded.enqueue_shards
 WHERE ${schema}.queue_meta.enqueue_shards IS DISTINCT FROM excluded.enqueue_shards

-- name: cron_upsert
SELECT ${schema}.cron_upsert($1::text, $2::text, $3::text, $4::text, $5::text, $6::jsonb, $7::smallint, $8::smallint,
                             $9::int, $10::timestamptz) AS changed

-- name: cron_list
SELECT name, cron, zone, kind, queue, args::text AS args, priority, max_attempts, catch_up, paused, revision,
       last_fire_at, evaluate_from
  FROM ${schema}.cron_schedules
 ORDER BY name

-- name: cron_pause
-- The revision moves, so a fire computed before the pause is refused even if it reaches cron_fire after a resume.
UPDATE ${schema}.cron_schedules
   SET paused = true, revision = revision + 1, updated_at = clock_timestamp()
 WHERE name = $1 AND NOT paused
RETURNING name

-- name: cron_resume
-- Fires that fell due while paused are skipped: evaluation starts again at the resume ($2, the engine's clock).
UPDATE ${schema}.cron_schedules
   SET paused = false, revision = revision + 1, evaluate_from = $2::timestamptz, updated_at = clock_timestamp()
 WHERE name = $1 AND paused
RETURNING name

-- name: cron_delete
DELETE FROM ${schema}.cron_schedules WHERE name = $1 RETURNING name

-- name: job
-- One job wherever it lives (R__85_job_lookup.sql decides the state); no row for an unknown or pruned job.
SELECT * FROM ${schema}.job_lookup($1::bigint)

-- name: queue_backoff
INSERT INTO ${schema}.queue_meta (queue, backoff_base_ms, backoff_cap_ms, backoff_jitter)
VALUES ($1, $2::bigint, $3::bigint, $4::double precision)
ON CONFLICT (queue) DO UPDATE
   SET backoff_base_ms = excluded.backoff_base_ms, backoff_cap_ms = excluded.backoff_cap_ms,
       backoff_jitter = excluded.backoff_jitter
 WHERE (${schema}.queue_meta.backoff_base_ms, ${schema}.queue_meta.backoff_cap_ms, ${schema}.queue_meta.backoff_jitter)
       IS DISTINCT FROM (excluded.backoff_base_ms, excluded.backoff_cap_ms, excluded.backoff_jitter)

-- name: doctor
-- The proof doctor (R__86_doctor.sql): read-only, one row per finding.
SELECT section, check_name, ring, slot, detail, job_id, run_lease FROM ${schema}.doctor($1::int, $2::int, $3::int)

-- name: queues
SELECT queue FROM ${schema}.queue_meta
 UNION SELECT queue FROM ${schema}.queue_claim_heads
 UNION SELECT DISTINCT queue FROM ${schema}.deferred_jobs
 UNION SELECT DISTINCT queue FROM ${schema}.dlq_entries
 ORDER BY 1

-- name: meter_queue_gauges
-- The cached per-queue gauges (RiffleMeter.QUEUE_*): the counts statement's reads for many queues at once, plus DLQ
-- depth and the oldest available job's age. Run by the meter refresh (never per scrape) and by admin().queueDepths.
WITH qs AS (
    SELECT DISTINCT q AS queue FROM unnest($1::text[]) AS q
),
heads AS MATERIALIZED (
    SELECT h.queue, h.priority, h.enqueue_shard, ${schema}.seq_next(h.seq_name) AS cursor
      FROM ${schema}.queue_claim_heads h
     WHERE h.queue = ANY($1::text[])
),
avail AS (
    SELECT r.queue, count(*) AS n, min(r.run_at) AS oldest
      FROM ${schema}.ready_entries r
      JOIN heads h ON h.queue = r.queue AND h.priority = r.priority AND h.enqueue_shard = r.enqueue_shard
     WHERE r.queue = ANY($1::text[]) AND r.lane_seq >= h.cursor
       AND NOT EXISTS (SELECT 1 FROM ${schema}.ready_tombstones t
                        WHERE t.ready_slot = r.ready_slot AND t.ready_generation = r.ready_generation
                          AND t.queue = r.queue AND t.priority = r.priority AND t.enqueue_shard = r.enqueue_shard
                          AND t.lane_seq = r.lane_seq)
       AND NOT EXISTS (SELECT 1 FROM ${schema}.ready_claim_attempt_batches e
                        WHERE e.ready_slot = r.ready_slot AND e.ready_generation = r.ready_generation
                          AND e.queue = r.queue AND e.priority = r.priority AND e.enqueue_shard = r.enqueue_shard
                          AND e.first_lane_seq <= r.lane_seq AND e.next_lane_seq > r.lane_seq
                          AND e.lane_ranges @> r.lane_seq)
     GROUP BY r.queue
),
open_claims AS (
    SELECT b.queue, count(*) AS n
      FROM ${schema}.lease_claim_batches b
     CROSS JOIN LATERAL unnest(b.receipt_ids) AS i(receipt_id)
     WHERE b.queue = ANY($1::text[])
       AND NOT EXISTS (SELECT 1 FROM ${schema}.lease_claim_closure_batches c
                        WHERE c.claim_slot = b.claim_slot AND c.receipt_ranges @> i.receipt_id)
     GROUP BY b.queue
),
deferred AS (
    SELECT queue, count(*) AS n FROM ${schema}.deferred_jobs WHERE queue = ANY($1::text[]) GROUP BY queue
),
dlq AS (
    SELECT queue, count(*) AS n FROM ${schema}.dlq_entries WHERE queue = ANY($1::text[]) GROUP BY queue
)
SELECT qs.queue,
       coalesce(avail.n, 0) AS available,
       coalesce(open_claims.n, 0) AS running,
       coalesce(deferred.n, 0) AS deferred,
       coalesce(dlq.n, 0) AS dlq,
       greatest(0, coalesce(extract(epoch FROM clock_timestamp() - avail.oldest), 0))::float8 AS oldest_age_seconds
  FROM qs
  LEFT JOIN avail ON avail.queue = qs.queue
  LEFT JOIN open_claims ON open_claims.queue = qs.queue
  LEFT JOIN deferred ON deferred.queue = qs.queue
  LEFT JOIN dlq ON dlq.queue = qs.queue

-- name: meter_dead_tuples
-- Dead tuples per table of the schema from the statistics collector (cold: no table is read), partitions summed
-- into their partitioned parent (a ring).
SELECT coalesce(p.relname, s.relname)::text AS table_name, sum(s.n_dead_tup)::bigint AS dead
  FROM pg_stat_user_tables s
  LEFT JOIN pg_inherits i ON i.inhrelid = s.relid
  LEFT JOIN pg_class p ON p.oid = i.inhparent
 WHERE s.schemaname = $1
 GROUP BY 1

-- name: queue_concurrency_limit
-- $2 NULL: no limit (QueueConfig.withConcurrencyLimit(0)).
INSERT INTO ${schema}.queue_meta (queue, concurrency_limit) VALUES ($1, $2::int)
ON CONFLICT (queue) DO UPDATE SET concurrency_limit = excluded.concurrency_limit
 WHERE ${schema}.queue_meta.concurrency_limit IS DISTINCT FROM excluded.concurrency_limit

-- name: queue_rate_limit
-- All three NULL: no limit (RateLimit.NONE).
INSERT INTO ${schema}.queue_meta (queue, rate_limit_jobs, rate_limit_period_ms, rate_limit_burst)
VALUES ($1, $2::int, $3::bigint, $4::int)
ON CONFLICT (queue) DO UPDATE
   SET rate_limit_jobs = excluded.rate_limit_jobs, rate_limit_period_ms = excluded.rate_limit_period_ms,
       rate_limit_burst = excluded.rate_limit_burst
 WHERE (${schema}.queue_meta.rate_limit_jobs, ${schema}.queue_meta.rate_limit_period_ms, ${schema}.queue_meta.rate_limit_burst)
       IS DISTINCT FROM (excluded.rate_limit_jobs, excluded.rate_limit_period_ms, excluded.rate_limit_burst)

-- name: queue_priority_aging
-- $2 NULL: no aging (Duration.ZERO).
INSERT INTO ${schema}.queue_meta (queue, priority_aging_ms) VALUES ($1, $2::bigint)
ON CONFLICT (queue) DO UPDATE SET priority_aging_ms = excluded.priority_aging_ms
 WHERE ${schema}.queue_meta.priority_aging_ms IS DISTINCT FROM excluded.priority_aging_ms

-- name: job_search
-- Newest jobs below a job id by queue, kind and state (R__85_job_lookup.sql); a row without job_id carries only the
-- scan bounds.
SELECT * FROM ${schema}.job_search($1::text, $2::text, $3::text, $4::bigint, $5::int, $6::int)
