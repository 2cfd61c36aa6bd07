-- Hot-path statements. Each is one round trip; the work happens in functions installed by the migrations.

-- name: enqueue
-- $7: the trace context to store with the jobs (docs/tracing.md), NULL when tracing is off or there is none.
SELECT j AS job_id
  FROM ${schema}.enqueue_jobs($1::text[], $2::text[], $3::jsonb[], $4::smallint[], $5::smallint[], $6::timestamptz[],
                              $7::jsonb) AS j

-- name: enqueue_unique
-- Only for a batch in which some job carries unique options (docs/unique-jobs.md); other batches use enqueue above.
SELECT u.job_id, u.duplicate
  FROM ${schema}.enqueue_unique_jobs($1::text[], $2::text[], $3::jsonb[], $4::smallint[], $5::smallint[],
                                     $6::timestamptz[], $7::jsonb[], $8::text[], $9::bigint[], $10::text[],
                                     $11::jsonb) AS u

-- name: enqueue_staging_create
-- COPY bulk enqueue (docs/bulk-enqueue.md), step 1: the session's staging table, created in the transaction that
-- stages (a creation rolled back with the caller's transaction is made again next time). ON COMMIT DELETE ROWS
-- empties it in place at commit or rollback: no dead tuples outlive the transaction (autovacuum never visits
-- temporary tables) and, unlike TRUNCATE, no new relfilenode per batch. Not schema-qualified: one table per
-- session serves every Riffle schema, a batch is told apart by its key.
CREATE TEMP TABLE IF NOT EXISTS riffle_enqueue_staging_v1 (
    batch        bigint      NOT NULL,
    ord          int         NOT NULL,
    queue        text        NOT NULL,
    kind         text        NOT NULL,
    args         jsonb       NOT NULL,
    priority     smallint    NOT NULL,
    max_attempts smallint    NOT NULL,
    run_at       timestamptz
) ON COMMIT DELETE ROWS

-- name: enqueue_staging_copy
-- Step 2: the rows, text format, one per job.
COPY pg_temp.riffle_enqueue_staging_v1 (batch, ord, queue, kind, args, priority, max_attempts, run_at) FROM STDIN

-- name: enqueue_staged
-- Step 3: the batch through the same enqueue_jobs as the enqueue statement above (lanes, shards, ring slot,
-- deferred rows, NOTIFY on commit), in staging order; ids come back in that order. The staged rows are consumed,
-- so a second batch in the same transaction starts from an empty table. $2: the batch's trace context, as $7 above.
WITH staged AS (
    DELETE FROM pg_temp.riffle_enqueue_staging_v1 s WHERE s.batch = $1 RETURNING s.*
), b AS (
    SELECT array_agg(s.queue ORDER BY s.ord) AS queues, array_agg(s.kind ORDER BY s.ord) AS kinds,
           array_agg(s.args ORDER BY s.ord) AS args, array_agg(s.priority ORDER BY s.ord) AS priorities,
           array_agg(s.max_attempts ORDER BY s.ord) AS max_attempts, array_agg(s.run_at ORDER BY s.ord) AS run_ats
      FROM staged s
)
SELECT j.job_id
  FROM b, ${schema}.enqueue_jobs(b.queues, b.kinds, b.args, b.priorities, b.max_attempts, b.run_ats, $2::jsonb)
          WITH ORDINALITY AS j(job_id, ord)
 ORDER BY j.ord

-- name: claim
-- Timestamps travel as epoch microseconds and JSON as text: parsing timestamptz text per row was the largest JVM cost of
-- a claim (bench JFR profile, docs/benchmarks.md). Only the columns Claimer reads are sent. A claim is one batch, and
-- the columns every row of it shares (status, queue, priority, shard, claim slot, batch id, claimed_at, deadline) come
-- only on its first row (batch_index 1) and are NULL on the others (the lateral h): the driver skips a NULL without
-- looking up a codec, and decoding column values was a fifth of the event loops' samples in a W=64 drain (JFR). A
-- materialized claim's rows (batch_index 0, no batch) carry every column. Keep the function call within the first
-- 1 kB of the text: pg_stat_activity shows no more by default (track_activity_query_size), and operators and
-- SubscriberCancelReleaseIT find a claim there by it.
SELECT h.status, c.job_id, c.kind, h.queue, c.args::text AS args, h.priority, c.attempt, c.run_lease,
       c.max_attempts, c.lane_seq, h.enqueue_shard, h.claim_slot, h.batch_id, c.batch_index, c.receipt_id,
       h.claimed_at_us, h.deadline_at_us, (extract(epoch FROM c.created_at) * 1000000)::bigint AS created_at_us,
       c.payload::text AS payload, c.lease_slot
  FROM ${schema}.claim_ready($1::text[], $2::int[], $3::int, $4::boolean[], $5::boolean) c
  LEFT JOIN LATERAL (SELECT c.status, c.queue, c.priority, c.enqueue_shard, c.claim_slot, c.batch_id,
                            (extract(epoch FROM c.claimed_at) * 1000000)::bigint AS claimed_at_us,
                            (extract(epoch FROM c.deadline_at) * 1000000)::bigint AS deadline_at_us) h
         ON c.batch_index IS NULL OR c.batch_index <= 1

-- name: claim_limited
-- claim for a subscription with a limited queue (claim_limited in R__30_claim.sql, docs/limits.md): claim_ready's
-- columns, each queue's claim capped at $6[i].
SELECT h.status, c.job_id, c.kind, h.queue, c.args::text AS args, h.priority, c.attempt, c.run_lease,
       c.max_attempts, c.lane_seq, h.enqueue_shard, h.claim_slot, h.batch_id, c.batch_index, c.receipt_id,
       h.claimed_at_us, h.deadline_at_us, (extract(epoch FROM c.created_at) * 1000000)::bigint AS created_at_us,
       c.payload::text AS payload, c.lease_slot
  FROM ${schema}.claim_limited($1::text[], $2::int[], $3::int, $4::boolean[], $5::boolean, $6::int[]) c
  LEFT JOIN LATERAL (SELECT c.status, c.queue, c.priority, c.enqueue_shard, c.claim_slot, c.batch_id,
                            (extract(epoch FROM c.claimed_at) * 1000000)::bigint AS claimed_at_us,
                            (extract(epoch FROM c.deadline_at) * 1000000)::bigint AS deadline_at_us) h
         ON c.batch_index IS NULL OR c.batch_index <= 1

-- name: complete
-- One summary row instead of one row per item: nearly every item is 'applied', and decoding a row per job was JVM time
-- spent on a constant. "total" is the number of items answered; other_ords / other_statuses list (1-based, in input
-- order) the items that were not applied and their status.
SELECT count(*)::int AS total,
       array_agg(c.ord::int ORDER BY c.ord) FILTER (WHERE c.status <> 'applied') AS other_ords,
       array_agg(c.status ORDER BY c.ord) FILTER (WHERE c.status <> 'applied') AS other_statuses
  FROM ${schema}.complete_compact($1::int[], $2::bigint[], $3::int[], $4::bigint[], $5::bigint[], $6::bigint[])
       WITH ORDINALITY AS c(job_id, run_lease, status, ord)

-- name: advance_cursors
SELECT ${schema}.advance_claim_cursors($1::text[], $2::smallint[], $3::smallint[], $4::bigint[]) AS moved

-- name: close
SELECT * FROM ${schema}.close_attempts($1::int[], $2::bigint[], $3::int[], $4::bigint[], $5::bigint[], $6::bigint[],
                                       $7::text[], $8::bigint[], $9::text[], $10::boolean[], $11::boolean[],
                                       $12::text[], $13::text[])

-- Materialized leases and external-wait callbacks (cold: only attempts that escalate take these).

-- name: register_callback
SELECT * FROM ${schema}.register_callback($1::int, $2::bigint, $3::int, $4::bigint, $5::bigint, $6::bigint,
                                          $7::double precision)

-- name: park_callback
SELECT status, payload::text AS payload FROM ${schema}.park_callback($1::bigint, $2::bigint, $3::uuid)

-- name: callback_status
SELECT status, payload::text AS payload FROM ${schema}.callback_status($1::bigint, $2::bigint, $3::uuid)

-- name: resume_external
SELECT ${schema}.resume_external($1::uuid, $2::jsonb) AS result

-- name: warm_session
-- Plans a new pooled connection's claim and completion statements before it carries load (R__88_session_warmup.sql).
SELECT ${schema}.warm_session() AS calls
