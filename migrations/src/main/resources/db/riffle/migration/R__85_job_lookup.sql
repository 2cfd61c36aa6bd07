-- Job lookup by id (admin().job(id), docs/operations.md#looking-up-a-job): the one place that decides a job's state.
-- Repeatable migration (docs/adr/0007): functions only, each as CREATE OR REPLACE, re-applied by Flyway
-- whenever this file changes. Tables, types and indexes live in the versioned V__ files; a function whose
-- signature changes is dropped there first.

-- Where a job is, read in ONE statement so every place is seen in the same snapshot (a job moves between places
-- only inside one transaction: a claim writes its evidence and receipt together, a close writes its closure and
-- disposition together, promotion moves the backlog row to the ready ring together). Candidates, best first:
--   1 'dlq'                        dlq_entries (wide row, outlives its queue slot);
--   2 'scheduled' | 'retryable'    deferred_jobs (wide row);
--   3 'running' | 'waiting_external'  a materialized lease;
--   4 'running'                    an open receipt (compact batch item or row-local claim) of one of its ready rows;
--   5 'completed' | 'failed' | 'cancelled'  terminal history: a compact completion or a narrow done row at one of
--                                  its ready positions, or a wide done row (a cancel from the backlog);
--   6 'available'                  its newest ready row, neither tombstoned nor claimed.
-- No row: the job id is unknown, its terminal history was pruned with its queue slot (history retention,
-- docs/design/rings-and-proofs.md#history-retention), or it was purged from the DLQ. A claimed newest ready row with
-- no open receipt and no other evidence is exactly what a DLQ purge leaves behind (every other way out of an attempt
-- writes a terminal, deferred, DLQ or newer ready row in the transaction that closes it), so it reads as gone, not
-- as running (a purged job used to read as 'running' here).
-- Cold path: reads each ready child by its job_id index, the leases by their attempt index, the claim batches of the
-- job's ready slots, and the completion batches and done rows of those slots without an index (admin only).
-- Errors come out of the payload's history (R__40_close.sql) as parallel arrays, oldest first; progress is the live
-- attempt's (attempt_state) when it runs, else the checkpoint carried in the payload.
CREATE OR REPLACE FUNCTION ${schema}.job_lookup(p_job_id bigint)
RETURNS TABLE (job_id bigint, state text, kind text, queue text, args text, priority int, attempt int,
               max_attempts int, run_lease bigint, run_at timestamptz, created_at timestamptz,
               attempted_at timestamptz, finalized_at timestamptz, progress text, dlq_reason text,
               error_messages text[], error_classes text[], error_traces text[], error_attempts int[],
               error_at_micros bigint[])
LANGUAGE sql STABLE AS $$
WITH ready AS MATERIALIZED (
    SELECT r.ready_slot, r.ready_generation, r.queue, r.priority, r.enqueue_shard, r.lane_seq, r.kind, r.args,
           r.attempt, r.run_lease, r.max_attempts, r.run_at, r.attempted_at, r.created_at, r.payload,
           EXISTS (SELECT 1 FROM ${schema}.ready_tombstones t
                    WHERE t.ready_slot = r.ready_slot AND t.ready_generation = r.ready_generation AND t.queue = r.queue
                      AND t.priority = r.priority AND t.enqueue_shard = r.enqueue_shard
                      AND t.lane_seq = r.lane_seq) AS tombstoned,
           EXISTS (SELECT 1 FROM ${schema}.ready_claim_attempt_batches e
                    WHERE e.ready_slot = r.ready_slot AND e.ready_generation = r.ready_generation
                      AND e.queue = r.queue AND e.priority = r.priority AND e.enqueue_shard = r.enqueue_shard
                      AND e.first_lane_seq <= r.lane_seq AND e.next_lane_seq > r.lane_seq
                      AND e.lane_ranges @> r.lane_seq) AS claimed
      FROM ${schema}.ready_entries r
     WHERE r.job_id = p_job_id
),
newest AS (
    -- The job's latest ready row: every re-append carries a run_lease above all earlier rows of the job.
    SELECT * FROM ready ORDER BY run_lease DESC, ready_generation DESC, lane_seq DESC LIMIT 1
),
cand AS (
    SELECT 1 AS rank, 'dlq' AS state, d.kind, d.queue, d.args, d.priority::int AS priority, d.attempt::int AS attempt,
           d.max_attempts::int AS max_attempts, d.run_lease, d.run_at, d.created_at, d.attempted_at,
           d.dlq_at AS finalized_at, d.payload, d.dlq_reason, NULL::jsonb AS live_progress
      FROM ${schema}.dlq_entries d
     WHERE d.job_id = p_job_id
    UNION ALL
    SELECT 2, d.state::text, d.kind, d.queue, d.args, d.priority, d.attempt, d.max_attempts, d.run_lease, d.run_at,
           d.created_at, d.attempted_at, NULL, d.payload, NULL, NULL
      FROM ${schema}.deferred_jobs d
     WHERE d.job_id = p_job_id
    UNION ALL
    SELECT 3, l.state::text, r.kind, r.queue, r.args, r.priority, l.attempt, l.max_attempts, l.run_lease, r.run_at,
           r.created_at, l.attempted_at, NULL, r.payload, NULL,
           (SELECT a.progress FROM ${schema}.attempt_state a WHERE a.job_id = p_job_id AND a.run_lease = l.run_lease)
      FROM ${schema}.leases l
      JOIN ready r
        ON r.ready_slot = l.ready_slot AND r.ready_generation = l.ready_generation AND r.queue = l.queue
       AND r.priority = l.priority AND r.enqueue_shard = l.enqueue_shard AND r.lane_seq = l.lane_seq
     WHERE l.job_id = p_job_id
    UNION ALL
    SELECT 4, 'running', r.kind, r.queue, r.args, r.priority, i.att, b.max_attempts[i.idx], i.rl, r.run_at,
           r.created_at, b.claimed_at, NULL, r.payload, NULL,
           (SELECT a.progress FROM ${schema}.attempt_state a WHERE a.job_id = p_job_id AND a.run_lease = i.rl)
      FROM ready r
      JOIN ${schema}.lease_claim_batches b
        ON b.ready_slot = r.ready_slot AND b.ready_generation = r.ready_generation AND b.queue = r.queue
       AND b.priority = r.priority AND b.enqueue_shard = r.enqueue_shard
     CROSS JOIN LATERAL unnest(b.job_ids, b.run_leases, b.receipt_ids, b.attempts, b.lane_seqs)
           WITH ORDINALITY AS i(jid, rl, rid, att, ls, idx)
     WHERE r.claimed AND b.job_ids @> ARRAY[p_job_id] AND i.jid = p_job_id AND i.ls = r.lane_seq
       AND NOT EXISTS (SELECT 1 FROM ${schema}.lease_claim_closure_batches c
                        WHERE c.claim_slot = b.claim_slot AND c.receipt_ranges @> i.rid)
    UNION ALL
    SELECT 4, 'running', r.kind, r.queue, r.args, r.priority, c.attempt, c.max_attempts, c.run_lease, r.run_at,
           r.created_at, c.claimed_at, NULL, r.payload, NULL,
           (SELECT a.progress FROM ${schema}.attempt_state a WHERE a.job_id = p_job_id AND a.run_lease = c.run_lease)
      FROM ready r
      JOIN ${schema}.lease_claims c
        ON c.job_id = p_job_id AND c.ready_slot = r.ready_slot AND c.ready_generation = r.ready_generation
       AND c.queue = r.queue AND c.priority = r.priority AND c.enqueue_shard = r.enqueue_shard
       AND c.lane_seq = r.lane_seq
     WHERE r.claimed AND c.closed_at IS NULL
       AND NOT EXISTS (SELECT 1 FROM ${schema}.lease_claim_closures e
                        WHERE e.claim_slot = c.claim_slot AND e.job_id = c.job_id AND e.run_lease = c.run_lease)
    UNION ALL
    SELECT 5, 'completed', r.kind, r.queue, r.args, r.priority, i.att, r.max_attempts, i.rl, r.run_at, r.created_at,
           i.att_at, b.finalized_at, r.payload, NULL, NULL
      FROM ready r
      JOIN ${schema}.receipt_completion_batches b
        ON b.ready_slot = r.ready_slot AND b.ready_generation = r.ready_generation AND b.queue = r.queue
       AND b.priority = r.priority AND b.enqueue_shard = r.enqueue_shard
     CROSS JOIN LATERAL unnest(b.job_ids, b.run_leases, b.lane_seqs, b.attempts, b.attempted_ats)
           AS i(jid, rl, ls, att, att_at)
     WHERE r.claimed AND b.job_ids @> ARRAY[p_job_id] AND i.jid = p_job_id AND i.ls = r.lane_seq
       AND NOT EXISTS (SELECT 1 FROM ${schema}.receipt_completion_tombstones t
                        WHERE t.ready_slot = b.ready_slot AND t.job_id = i.jid AND t.run_lease = i.rl)
    UNION ALL
    SELECT 5, d.state::text, d.kind, d.queue, coalesce(d.args, r.args), d.priority, d.attempt,
           coalesce(d.max_attempts, r.max_attempts), d.run_lease, coalesce(d.run_at, r.run_at),
           coalesce(d.created_at, r.created_at), d.attempted_at, d.finalized_at, coalesce(d.payload, r.payload), NULL,
           NULL
      FROM ready r
      JOIN ${schema}.done_entries d
        ON d.ready_slot = r.ready_slot AND d.queue = r.queue AND d.priority = r.priority
       AND d.enqueue_shard = r.enqueue_shard AND d.lane_seq = r.lane_seq AND d.ready_generation = r.ready_generation
     WHERE d.job_id = p_job_id
    UNION ALL
    SELECT 5, d.state::text, d.kind, d.queue, d.args, d.priority, d.attempt, d.max_attempts, d.run_lease, d.run_at,
           d.created_at, d.attempted_at, d.finalized_at, d.payload, NULL, NULL
      FROM ${schema}.done_entries d
     WHERE d.lane_seq = -p_job_id AND d.job_id = p_job_id
    UNION ALL
    SELECT 6, 'available', n.kind,
           n.queue, n.args, n.priority, n.attempt, n.max_attempts, n.run_lease, n.run_at, n.created_at,
           n.attempted_at, NULL, n.payload, NULL, NULL
      FROM newest n
     WHERE NOT n.tombstoned AND NOT n.claimed
),
best AS (
    SELECT * FROM cand ORDER BY rank, run_lease DESC LIMIT 1
)
SELECT p_job_id, b.state, b.kind, b.queue, b.args::text, b.priority, b.attempt, b.max_attempts, b.run_lease,
       b.run_at, b.created_at, b.attempted_at, b.finalized_at,
       coalesce(b.live_progress, b.payload -> 'progress')::text, b.dlq_reason,
       coalesce(e.messages, '{}'), coalesce(e.classes, '{}'), coalesce(e.traces, '{}'), coalesce(e.attempts, '{}'),
       coalesce(e.ats, '{}')
  FROM best b
  LEFT JOIN LATERAL (
      SELECT array_agg(x.e ->> 'message' ORDER BY x.n) AS messages, array_agg(x.e ->> 'class' ORDER BY x.n) AS classes,
             array_agg(x.e ->> 'stack_trace' ORDER BY x.n) AS traces,
             array_agg((x.e ->> 'attempt')::int ORDER BY x.n) AS attempts,
             array_agg((extract(epoch FROM (x.e ->> 'at')::timestamptz) * 1000000)::bigint ORDER BY x.n) AS ats
        FROM jsonb_array_elements(CASE WHEN jsonb_typeof(b.payload -> 'errors') = 'array' THEN b.payload -> 'errors'
                                       ELSE '[]'::jsonb END) WITH ORDINALITY AS x(e, n)
  ) e ON true
$$;

-- Job search (admin().searchJobs, the dashboard's job list): the newest jobs below p_before, by queue and/or kind
-- and/or state, each resolved by job_lookup so a search never disagrees with a lookup by id. Keyset paging on
-- job_id; bounded twice: at most p_scan candidate ids are read (newest first) and looked up, at most p_limit rows
-- returned. Candidates come from where a job of the wanted state can be: the DLQ for 'dlq', the backlog for
-- 'scheduled' and 'retryable' (its state column already says which), and the ready and done rows for the rest,
-- whose state only job_lookup can tell (a candidate that turns out to be elsewhere is dropped by the state filter).
-- A job without a ready, backlog, done or DLQ row (pruned history) is not found, as by job_lookup.
-- Always returns at least one row: scan_floor (the smallest candidate id read, NULL when none) and scan_full
-- (p_scan candidates were read, so older ones may match) let the caller page on even when the state filter
-- dropped every candidate; a row whose job_id is NULL carries only those two.
-- Cold path: each candidate source is read through its job_id index newest first; with a queue or kind filter
-- that index scan skips non-matching rows, so a rare queue costs a longer scan (admin only).
CREATE OR REPLACE FUNCTION ${schema}.job_search(p_queue text, p_kind text, p_state text, p_before bigint,
                                                p_scan int, p_limit int)
RETURNS TABLE (scan_floor bigint, scan_full boolean, job_id bigint, state text, kind text, queue text, args text,
               priority int, attempt int, max_attempts int, run_lease bigint, run_at timestamptz,
               created_at timestamptz, attempted_at timestamptz, finalized_at timestamptz, progress text,
               dlq_reason text, error_messages text[], error_classes text[], error_traces text[],
               error_attempts int[], error_at_micros bigint[])
LANGUAGE sql STABLE AS $$
WITH cand AS MATERIALIZED (
    SELECT DISTINCT c.job_id FROM (
        (SELECT d.job_id FROM ${schema}.dlq_entries d
          WHERE (p_state IS NULL OR p_state = 'dlq') AND d.job_id < p_before
            AND (p_queue IS NULL OR d.queue = p_queue) AND (p_kind IS NULL OR d.kind = p_kind)
          ORDER BY d.job_id DESC LIMIT p_scan)
        UNION ALL
        (SELECT d.job_id FROM ${schema}.deferred_jobs d
          WHERE (p_state IS NULL OR d.state::text = p_state) AND d.job_id < p_before
            AND (p_queue IS NULL OR d.queue = p_queue) AND (p_kind IS NULL OR d.kind = p_kind)
          ORDER BY d.job_id DESC LIMIT p_scan)
        UNION ALL
        (SELECT r.job_id FROM ${schema}.ready_entries r
          WHERE (p_state IS NULL OR p_state NOT IN ('dlq', 'scheduled', 'retryable')) AND r.job_id < p_before
            AND (p_queue IS NULL OR r.queue = p_queue) AND (p_kind IS NULL OR r.kind = p_kind)
          ORDER BY r.job_id DESC LIMIT p_scan)
        UNION ALL
        (SELECT d.job_id FROM ${schema}.done_entries d
          WHERE (p_state IS NULL OR p_state IN ('completed', 'failed', 'cancelled')) AND d.job_id < p_before
            AND (p_queue IS NULL OR d.queue = p_queue) AND (p_kind IS NULL OR d.kind = p_kind)
          ORDER BY d.job_id DESC LIMIT p_scan)
    ) c
    ORDER BY c.job_id DESC
    LIMIT p_scan
),
scan AS (
    SELECT min(c.job_id) AS scan_floor, count(*) >= p_scan AS scan_full FROM cand c
),
found AS (
    SELECT l.*
      FROM cand c
     CROSS JOIN LATERAL ${schema}.job_lookup(c.job_id) l
     WHERE (p_state IS NULL OR l.state = p_state)
       AND (p_queue IS NULL OR l.queue = p_queue) AND (p_kind IS NULL OR l.kind = p_kind)
     ORDER BY l.job_id DESC
     LIMIT p_limit
)
SELECT s.scan_floor, s.scan_full, f.*
  FROM scan s
  LEFT JOIN found f ON true
 ORDER BY f.job_id DESC NULLS LAST
$$;
