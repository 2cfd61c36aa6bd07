-- Closing an attempt: compact success, and every other exit through close_attempts, with its routing helpers.
-- Repeatable migration (docs/adr/0007): functions only, each as CREATE OR REPLACE, re-applied by Flyway
-- whenever this file changes. Tables, types and indexes live in the versioned V__ files; a function whose
-- signature changes is dropped there first.

-- Every way an attempt can end (docs/design/delivery-contract.md). The hot-path rules in the header of
-- R__20_enqueue.sql hold here too.

-- Backoff for a retry of p_queue after consuming attempt n (1-based), by the queue's recorded policy (queue_meta,
-- written at engine start from QueueConfig.backoff; V4__queue_backoff.sql):
--   least(cap, base * 2^(n - 1) * (1 + U[0, jitter])).
-- A queue with no recorded policy keeps the built-in one: 2^n s plus up to 25 % jitter, capped at 24 h. A handler's
-- explicit delay, or an engine-side BackoffFunction, arrives as a delay and never reaches this function; every
-- rescue does.
CREATE OR REPLACE FUNCTION ${schema}.retry_backoff(p_queue text, p_attempt int) RETURNS interval
LANGUAGE sql VOLATILE AS $$
    SELECT make_interval(secs => CASE
               WHEN m.backoff_base_ms IS NULL
                   THEN least(power(2, least(p_attempt, 30)) * (1 + random() * 0.25), 86400)
               ELSE least(m.backoff_base_ms * power(2, least(greatest(p_attempt, 1) - 1, 40))
                              * (1 + random() * m.backoff_jitter),
                          m.backoff_cap_ms) / 1000.0 END)
      FROM (SELECT 1) one
      LEFT JOIN ${schema}.queue_meta m ON m.queue = p_queue
$$;

-- Longest stack trace kept per error in the payload's history, in characters (the engine cuts it too).
CREATE OR REPLACE FUNCTION ${schema}.max_error_trace() RETURNS int
LANGUAGE sql IMMUTABLE AS $$
    SELECT 8192
$$;

-- The payload with the attempt's last recorded progress (attempt_state.progress) merged in under "progress".
CREATE OR REPLACE FUNCTION ${schema}.with_progress(p_payload jsonb, p_job_id bigint, p_run_lease bigint) RETURNS jsonb
LANGUAGE sql STABLE AS $$
    SELECT CASE WHEN a.progress IS NULL THEN p_payload
                ELSE jsonb_set(coalesce(p_payload, '{}'::jsonb), '{progress}', a.progress) END
      FROM (SELECT (SELECT progress FROM ${schema}.attempt_state s
                     WHERE s.job_id = p_job_id AND s.run_lease = p_run_lease) AS progress) a
$$;

-- A queue's DLQ policy, the one rule every exit path applies (docs/design/delivery-contract.md, DLQ policy): the
-- policy recorded for the queue in queue_meta (written at engine start from an explicit QueueConfig.dlq; the last
-- engine to start wins) decides; p_default, the dlqByDefault of the engine running the exit, decides only for a queue
-- with no recorded policy. Handler exits and maintenance exits read the same row, so two engines can no longer route
-- one queue's failures differently.
CREATE OR REPLACE FUNCTION ${schema}.dlq_for(p_queue text, p_default boolean) RETURNS boolean
LANGUAGE sql STABLE AS $$
    SELECT coalesce((SELECT m.dlq_enabled FROM ${schema}.queue_meta m WHERE m.queue = p_queue), p_default)
$$;

-- How an exit routes, given the attempt's count and the queue's DLQ policy: one definition for every close path.
CREATE OR REPLACE FUNCTION ${schema}.exit_disposition(p_exit text, p_attempt int, p_max_attempts int, p_dlq boolean) RETURNS text
LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN p_exit = 'complete' THEN 'completed'
                WHEN p_exit = 'snooze' THEN 'scheduled'
                WHEN p_exit = 'release' THEN 'released'
                WHEN p_exit IN ('retry', 'rescue', 'deadline', 'callback_timeout') AND p_attempt < p_max_attempts
                    THEN 'retryable'
                WHEN p_exit = 'cancel' THEN 'cancelled'
                WHEN p_dlq THEN 'dlq'
                ELSE 'failed' END
$$;

-- Compact successful completion (docs/design/delivery-contract.md) for a batch of attempts, as one statement:
--   1. per-attempt advisory xact locks, sorted, in their own statement;
--   2. per claim slot, a fused statement (fresh snapshot, so it sees any competing closer that committed while we
--      waited) that validates each item against its claim batch row, anti-joins closure evidence, then appends ONE
--      closure batch row per (claim slot, ready slot, generation) and ONE completion batch row per lane group.
-- Returns one row per input position, in the vocabulary close_attempts shares: 'applied'; 'applied_before' (the
-- attempt was already closed as completed: a duplicate of the same attempt within the batch, or an earlier try of
-- this very flush that committed although its answer was lost); 'already_closed' (closed with another outcome:
-- cancelled, rescued, ...); or 'stale' (no such open attempt: wrong run_lease, receipt, batch or index).
CREATE OR REPLACE FUNCTION ${schema}.complete_compact(p_claim_slots int[], p_batch_ids bigint[], p_idxs int[],
                                           p_job_ids bigint[], p_run_leases bigint[], p_receipt_ids bigint[])
RETURNS TABLE (job_id bigint, run_lease bigint, status text)
LANGUAGE plpgsql VOLATILE SET plan_cache_mode = force_generic_plan AS $$
#variable_conflict use_column
DECLARE
    v_slot  int;
    v_done  bigint[] := '{}';
    v_part  bigint[];
    x       record;
    v_valid boolean;
    v_closed boolean;
    v_leases boolean;
BEGIN
    PERFORM ${schema}.lock_attempts(p_job_ids, p_run_leases);
    -- Leases are rare (long or callback-waiting attempts): probe the lease ring per item only when it has any.
    -- Read after the locks, so a lease materialized by a holder we waited for is seen.
    v_leases := EXISTS (SELECT 1 FROM ${schema}.leases);

    FOR v_slot IN SELECT DISTINCT s FROM unnest(p_claim_slots) s ORDER BY 1 LOOP
        -- A slot number that names no partition can only come from a forged receipt: its items are stale.
        CONTINUE WHEN to_regclass(format('%s.%I', '${schema}', 'lease_claim_batches_' || v_slot)) IS NULL;
        v_part := ${schema}.complete_compact_slot(p_claim_slots, p_batch_ids, p_idxs, p_job_ids, p_run_leases,
                                                  p_receipt_ids, v_slot, v_leases);
        v_done := v_done || v_part;
    END LOOP;

    -- Common case: everything applied, answer without touching any table.
    IF cardinality(v_done) = cardinality(p_job_ids) THEN
        RETURN QUERY SELECT u.jid, u.rl, 'applied'::text FROM unnest(p_job_ids, p_run_leases) AS u(jid, rl);
        RETURN;
    END IF;

    -- Rare case: classify the rejected items one by one, each against its own slot's children only.
    FOR x IN SELECT * FROM unnest(p_claim_slots, p_batch_ids, p_idxs, p_job_ids, p_run_leases, p_receipt_ids)
                           WITH ORDINALITY AS u(cs, bid, idx, jid, rl, rid, ord) ORDER BY u.ord LOOP
        job_id := x.jid;
        run_lease := x.rl;
        IF x.ord = ANY (v_done) THEN
            status := 'applied';
        ELSIF to_regclass(format('%s.%I', '${schema}', 'lease_claim_batches_' || x.cs)) IS NULL THEN
            status := 'stale';
        ELSE
            EXECUTE format('SELECT EXISTS (SELECT 1 FROM %s.%I b WHERE b.claim_slot = $6 AND b.batch_id = $1
                                 AND $2 BETWEEN 1 AND b.claimed_count AND b.job_ids[$2] = $3 AND b.run_leases[$2] = $4
                                 AND b.receipt_ids[$2] = $5)',
                           '${schema}', 'lease_claim_batches_' || x.cs)
               INTO v_valid USING x.bid, x.idx, x.jid, x.rl, x.rid, x.cs;
            IF NOT v_valid THEN
                status := 'stale';
            ELSE
                -- The closure's own outcome tells a completion that already went through (a retried flush whose
                -- first try committed) from one that someone else (cancel, rescue) closed first.
                EXECUTE format('SELECT bool_or(c.outcome = ''completed'') FROM %s.%I c WHERE c.receipt_ranges @> $1',
                               '${schema}', 'lease_claim_closure_batches_' || x.cs)
                   INTO v_closed USING x.rid;
                status := CASE WHEN v_closed THEN 'applied_before' WHEN NOT v_closed THEN 'already_closed' ELSE 'stale' END;
            END IF;
        END IF;
        RETURN NEXT;
    END LOOP;
END
$$;

-- The per-claim-slot statement of complete_compact, static (docs/adr/0009; the reasons are those of
-- define_claim_compact in R__30_claim.sql): define_complete_compact writes one complete_compact_<slot> per claim-ring
-- slot, naming that slot's lease_claim_batches and lease_claim_closure_batches children, and complete_compact_slot,
-- which picks it with a CASE (define_slot_dispatcher, R__02_slot_functions.sql). $1..$8 in the statement are the
-- function's parameters. The ring's slot count is fixed when the schema is created (V1), so the functions are written
-- once here, whenever this file is applied.
-- Every lookup that depends on an item (its batch row, its closure, its lease) is an OFFSET 0 subquery, which the
-- planner cannot flatten into a join: it stays a probe per item, with the item's values in the index condition. A
-- cached generic plan is built when the child is empty (after a prune's TRUNCATE) and kept while the slot fills; built
-- as a join it was once an index scan on claim_slot alone with batch_id as a join filter, which read every batch of
-- the slot for every item (43 ms per completion in the bench's pinned phase).
CREATE OR REPLACE FUNCTION ${schema}.define_complete_compact() RETURNS void
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    -- The lease probe: only in the statement for when the lease ring holds any lease ($8). One static statement with
    -- "NOT $8 OR NOT EXISTS (...)" would keep the probe, an Append over every lease child, in its generic plan, to be
    -- initialised on every completion; the statement built per call used to drop it at plan time. (The locks on the
    -- lease children are taken anyway, by complete_compact's EXISTS on the leases parent.)
    c_lease_probe constant text :=
        '               AND NOT EXISTS (SELECT 1 FROM ${schema}.leases l WHERE l.job_id = f.jid AND l.run_lease = f.rl OFFSET 0)'
        || E'\n';
    n      int;
    s      int;
    v_stmt text;
BEGIN
    -- Not ring_slot_count(): R__60_ring.sql, which defines it, is applied after this file on a new schema.
    SELECT c.slot_count INTO n FROM ${schema}.claim_ring_state c;
    FOR s IN 0 .. n - 1 LOOP
        v_stmt := $q$
        WITH f AS (
            SELECT DISTINCT ON (x.rid) x.*
              FROM unnest($1::int[], $2::bigint[], $3::int[], $4::bigint[], $5::bigint[], $6::bigint[])
                   WITH ORDINALITY AS x(cs, bid, idx, jid, rl, rid, ord)
             WHERE x.cs = $7
             ORDER BY x.rid, x.ord
        ),
        -- The receipts of this statement already closed: one GiST search for closure rows overlapping all its
        -- receipts at once (usually none), instead of one probe per item.
        closed AS MATERIALIZED (
            SELECT r.rid
              FROM %1$s.%3$I c, unnest(c.receipt_ids) AS r(rid)
             WHERE c.receipt_ranges && (SELECT range_agg(int8range(f.rid, f.rid + 1)) FROM f)
        ),
        -- Each claim batch the items name, read once, its arrays decompressed once. A batch of more than about
        -- 50 jobs is stored compressed, and subscripting the stored row per item (b.job_ids[f.idx], ...) decompressed
        -- the whole array again for every item: completing one 256-job batch took 3.2 ms, 1.6 ms now (quadratic;
        -- pgbench, docs/benchmarks.md session 11). The slices are new, plain arrays and stay plain in the
        -- materialized CTE, where subscripting one is a direct offset. (Unnesting the batches and joining the items
        -- to them instead made a nested loop of items x batch items: the planner sees one row in f.)
        bat AS MATERIALIZED (
            SELECT b.batch_id, b.claimed_count, b.ready_slot, b.ready_generation, b.queue, b.priority, b.enqueue_shard,
                   b.claimed_at, b.job_ids[1:b.claimed_count] AS job_ids,
                   b.run_leases[1:b.claimed_count] AS run_leases, b.receipt_ids[1:b.claimed_count] AS receipt_ids,
                   b.lane_seqs[1:b.claimed_count] AS lane_seqs, b.attempts[1:b.claimed_count] AS attempts
              FROM (SELECT DISTINCT f.bid FROM f) d
              JOIN LATERAL (SELECT * FROM %1$s.%2$I b1 WHERE b1.claim_slot = $7 AND b1.batch_id = d.bid OFFSET 0) b
                ON true
        ),
        ok AS MATERIALIZED (
            SELECT f.ord, f.jid, f.rl, f.rid, b.ready_slot, b.ready_generation, b.queue, b.priority, b.enqueue_shard,
                   b.lane_seqs[f.idx] AS lane_seq, b.attempts[f.idx] AS attempt, b.claimed_at
              FROM f
              JOIN bat b ON b.batch_id = f.bid
             WHERE f.idx BETWEEN 1 AND b.claimed_count
               AND b.job_ids[f.idx] = f.jid AND b.run_leases[f.idx] = f.rl AND b.receipt_ids[f.idx] = f.rid
               AND NOT EXISTS (SELECT 1 FROM closed WHERE closed.rid = f.rid)
%4$s        ),
        gone AS (
            DELETE FROM %1$s.attempt_state a USING ok WHERE a.job_id = ok.jid AND a.run_lease = ok.rl
        ),
        closure AS (
            INSERT INTO %1$s.%3$I (claim_slot, ready_slot, ready_generation, outcome, closed_count, receipt_ids,
                                   receipt_ranges, closed_at)
            SELECT $7, ok.ready_slot, ok.ready_generation, 'completed', count(*), array_agg(ok.rid ORDER BY ok.rid),
                   range_agg(int8range(ok.rid, ok.rid + 1)), clock_timestamp()
              FROM ok
             GROUP BY ok.ready_slot, ok.ready_generation
        ),
        terminal AS (
            INSERT INTO %1$s.receipt_completion_batches (ready_slot, ready_generation, claim_slot, queue, priority,
                                                         enqueue_shard, completed_count, job_ids, run_leases,
                                                         lane_seqs, attempts, attempted_ats, finalized_at)
            SELECT ok.ready_slot, ok.ready_generation, $7, ok.queue, ok.priority, ok.enqueue_shard, count(*),
                   array_agg(ok.jid ORDER BY ok.lane_seq, ok.jid), array_agg(ok.rl ORDER BY ok.lane_seq, ok.jid),
                   array_agg(ok.lane_seq ORDER BY ok.lane_seq, ok.jid), array_agg(ok.attempt ORDER BY ok.lane_seq, ok.jid),
                   array_agg(ok.claimed_at ORDER BY ok.lane_seq, ok.jid), clock_timestamp()
              FROM ok
             GROUP BY ok.ready_slot, ok.ready_generation, ok.queue, ok.priority, ok.enqueue_shard
        )
        SELECT coalesce(array_agg(ok.ord), '{}') FROM ok
        $q$;
        EXECUTE format($f$
CREATE OR REPLACE FUNCTION %1$s.%2$I(p_claim_slots int[], p_batch_ids bigint[], p_idxs int[], p_job_ids bigint[],
                                     p_run_leases bigint[], p_receipt_ids bigint[], p_slot int, p_leases boolean)
RETURNS bigint[]
LANGUAGE plpgsql VOLATILE SET plan_cache_mode = force_generic_plan SET enable_seqscan = off AS $fn$
DECLARE
    v_part bigint[];
BEGIN
    IF $8 THEN
%3$s
        INTO v_part;
    ELSE
%4$s
        INTO v_part;
    END IF;
    RETURN v_part;
END
$fn$
$f$, '${schema}', 'complete_compact_' || s,
             format(v_stmt, '${schema}', 'lease_claim_batches_' || s, 'lease_claim_closure_batches_' || s, c_lease_probe),
             format(v_stmt, '${schema}', 'lease_claim_batches_' || s, 'lease_claim_closure_batches_' || s, ''));
    END LOOP;

    PERFORM ${schema}.define_slot_dispatcher('complete_compact_slot', 'complete_compact',
        'p_claim_slots int[], p_batch_ids bigint[], p_idxs int[], p_job_ids bigint[], p_run_leases bigint[],
         p_receipt_ids bigint[], p_slot int, p_leases boolean',
        'RETURNS bigint[]', 'p_slot', 'RETURN %s($1, $2, $3, $4, $5, $6, $7, $8)', n);
END
$$;

SELECT ${schema}.define_complete_compact();

-- Close open attempts of either claim shape, as one statement (docs/design/delivery-contract.md). This is the general
-- path: every non-success exit, and success of a materialized (leased) attempt. Compact successes use the cheaper
-- complete_compact.
--   1. per-attempt advisory locks, sorted, in their own statement (the same keys completion takes);
--   2. per claim slot, a fused statement (fresh snapshot) that validates each item against its receipt (compact
--      batch item, or row-local lease_claims row when batch id is 0), anti-joins closure evidence, checks that the
--      caller's view of the lease (p_leased) matches the database's, hydrates the job from its retained ready row,
--      writes closure evidence in the claim's shape (compact: ONE closure batch row per (ready slot, generation,
--      outcome); row-local: an explicit lease_claim_closures row plus the closed_at fence), deletes the lease, and
--      writes the disposition:
--        complete -> compact terminal row (receipt_completion_batches), one per lane group;
--        retry with attempts left -> deferred 'retryable' at now + delay (or the backoff), error appended;
--        retry with none left, or fail -> narrow done_entries 'failed' (+ count delta), or dlq_entries when dlq_for(queue, p_dlq);
--        snooze -> deferred 'scheduled' at now + delay, the attempt is given back;
--        cancel -> narrow done_entries 'cancelled' (+ count delta).
-- p_exits: 'complete' | 'retry' | 'snooze' | 'fail' | 'cancel', and for maintenance 'rescue' (stale worker),
-- 'deadline' (deadline expired) and 'callback_timeout', which route like a retry but label the closure 'rescued' /
-- 'deadline_expired' / 'callback_timeout' (a leased attempt is deadline-closed only while its lease runs past an
-- expired deadline: a lease parked on a callback has its deadline suspended); an exhausted
-- attempt reaching rescue goes to failure or the DLQ, never to another retry. 'release' is for attempts that were
-- claimed but never handed to a handler (shutdown, cancelled subscription): closure 'released', the attempt is
-- given back and the job is re-appended as ready at once, in the same transaction. run_lease is kept on every path, so the next claim's run lease
-- is higher than any evidence of this attempt. Returns per input position: status 'applied' | 'applied_before' |
-- 'already_closed' | 'stale' (the vocabulary complete_compact shares), and the disposition written.
-- 'applied_before' is only answered for a worker exit whose
-- attempt already carries exactly the closure this exit writes (a retried flush whose first try committed, or the
-- same exit sent twice); 'already_closed' means someone else (cancel, rescue, another exit) closed it first, so a
-- retried flush can tell its own earlier commit from a competing closer. Maintenance exits never see 'applied_before'.
CREATE OR REPLACE FUNCTION ${schema}.close_attempts(p_claim_slots int[], p_batch_ids bigint[], p_idxs int[], p_job_ids bigint[],
                                         p_run_leases bigint[], p_receipt_ids bigint[], p_exits text[],
                                         p_delays_ms bigint[], p_errors text[], p_dlq boolean[],
                                         p_leased boolean[] DEFAULT '{}', p_error_classes text[] DEFAULT '{}',
                                         p_error_traces text[] DEFAULT '{}')
RETURNS TABLE (job_id bigint, run_lease bigint, status text, disposition text)
LANGUAGE plpgsql VOLATILE SET plan_cache_mode = force_generic_plan AS $$
#variable_conflict use_column
DECLARE
    v_slot  int;
    v_done  bigint[] := '{}';
    v_disp  text[] := '{}';
    v_part  record;
    v_back  record;
    v_lane  record;
    v_lane_q text[];
    v_lane_p smallint[];
BEGIN
    PERFORM ${schema}.lock_attempts(p_job_ids, p_run_leases);

    FOR v_slot IN SELECT DISTINCT s FROM unnest(p_claim_slots) s ORDER BY 1 LOOP
        WITH f AS (
            SELECT DISTINCT ON (x.rid) x.cs, x.bid, x.idx, x.jid, x.rl, x.rid, x.ex, x.delay_ms, x.err, x.dlq,
                   coalesce(x.leased, false) AS leased, x.err_class, x.err_trace, x.ord
              FROM unnest(p_claim_slots, p_batch_ids, p_idxs, p_job_ids, p_run_leases, p_receipt_ids, p_exits,
                          p_delays_ms, p_errors, p_dlq, p_leased, p_error_classes, p_error_traces)
                   WITH ORDINALITY AS x(cs, bid, idx, jid, rl, rid, ex, delay_ms, err, dlq, leased, err_class,
                                        err_trace, ord)
             WHERE x.cs = v_slot
             ORDER BY x.rid, x.ord
        ),
        -- Each compact claim batch the items name, read once, its arrays decompressed once (as in
        -- complete_compact's statement above: subscripting the stored row per item decompressed the batch's arrays
        -- once per item, so rescuing a whole batch of n jobs cost n^2).
        bat AS MATERIALIZED (
            SELECT b.batch_id, b.claimed_count, b.ready_slot, b.ready_generation, b.queue, b.priority,
                   b.enqueue_shard, b.claimed_at, b.job_ids[1:b.claimed_count] AS job_ids,
                   b.run_leases[1:b.claimed_count] AS run_leases, b.receipt_ids[1:b.claimed_count] AS receipt_ids,
                   b.lane_seqs[1:b.claimed_count] AS lane_seqs, b.attempts[1:b.claimed_count] AS attempts,
                   b.max_attempts[1:b.claimed_count] AS max_attempts
              FROM (SELECT DISTINCT f.bid FROM f WHERE f.bid <> 0) d
              JOIN LATERAL (SELECT * FROM ${schema}.lease_claim_batches b1
                             WHERE b1.claim_slot = v_slot AND b1.batch_id = d.bid OFFSET 0) b ON true
        ),
        ok AS MATERIALIZED (
            SELECT f.*, b.ready_slot, b.ready_generation, b.queue, b.priority, b.enqueue_shard,
                   b.lane_seqs[f.idx] AS lane_seq, b.attempts[f.idx] AS attempt, b.max_attempts[f.idx] AS max_attempts,
                   b.claimed_at, false AS row_local
              FROM f
              JOIN bat b ON b.batch_id = f.bid
             WHERE f.bid <> 0 AND f.idx BETWEEN 1 AND b.claimed_count
               AND b.job_ids[f.idx] = f.jid AND b.run_leases[f.idx] = f.rl AND b.receipt_ids[f.idx] = f.rid
               AND NOT EXISTS (SELECT 1 FROM ${schema}.lease_claim_closure_batches c
                                WHERE c.claim_slot = v_slot AND c.receipt_ranges @> f.rid)
               AND EXISTS (SELECT 1 FROM ${schema}.leases l WHERE l.job_id = f.jid AND l.run_lease = f.rl) = f.leased
               AND (f.ex <> 'deadline' OR NOT f.leased
                    OR EXISTS (SELECT 1 FROM ${schema}.leases l WHERE l.job_id = f.jid AND l.run_lease = f.rl
                                  AND l.state = 'running' AND l.deadline_at < clock_timestamp()))
            UNION ALL
            SELECT f.*, c.ready_slot, c.ready_generation, c.queue, c.priority, c.enqueue_shard, c.lane_seq, c.attempt,
                   c.max_attempts, c.claimed_at, true AS row_local
              FROM f
              JOIN ${schema}.lease_claims c
                ON c.claim_slot = v_slot AND c.job_id = f.jid AND c.run_lease = f.rl AND c.receipt_id = f.rid
             WHERE f.bid = 0 AND c.closed_at IS NULL
               AND NOT EXISTS (SELECT 1 FROM ${schema}.lease_claim_closures x
                                WHERE x.claim_slot = v_slot AND x.job_id = f.jid AND x.run_lease = f.rl)
               AND EXISTS (SELECT 1 FROM ${schema}.leases l WHERE l.job_id = f.jid AND l.run_lease = f.rl) = f.leased
               AND (f.ex <> 'deadline' OR NOT f.leased
                    OR EXISTS (SELECT 1 FROM ${schema}.leases l WHERE l.job_id = f.jid AND l.run_lease = f.rl
                                  AND l.state = 'running' AND l.deadline_at < clock_timestamp()))
        ),
        hyd AS MATERIALIZED (
            SELECT ok.*, r.kind, r.args, r.created_at, r.payload AS ready_payload,
                   ${schema}.exit_disposition(ok.ex, ok.attempt, ok.max_attempts, dq.dlq) AS disp,
                   CASE ok.ex WHEN 'rescue' THEN 'rescued' WHEN 'deadline' THEN 'deadline_expired'
                              WHEN 'callback_timeout' THEN 'callback_timeout'
                              ELSE ${schema}.exit_disposition(ok.ex, ok.attempt, ok.max_attempts, dq.dlq) END AS label,
                   -- Progress recorded by the attempt (attempt_state) rides along in the payload, so the next
                   -- attempt can resume from its checkpoint. Each error is {message, class, stack_trace, attempt,
                   -- at}; class and stack_trace only when the exit carried an exception (the trace cut to
                   -- max_error_trace() characters); the last 10 are kept.
                   CASE WHEN ok.err IS NULL THEN ${schema}.with_progress(r.payload, ok.jid, ok.rl)
                        ELSE jsonb_set(coalesce(${schema}.with_progress(r.payload, ok.jid, ok.rl), '{}'::jsonb), '{errors}',
                               (SELECT coalesce(jsonb_agg(e ORDER BY n), '[]'::jsonb)
                                  FROM (SELECT e, n FROM jsonb_array_elements(
                                                coalesce(r.payload -> 'errors', '[]'::jsonb)
                                                || jsonb_build_array(jsonb_strip_nulls(jsonb_build_object(
                                                       'message', ok.err, 'class', ok.err_class,
                                                       'stack_trace', left(ok.err_trace, ${schema}.max_error_trace()),
                                                       'attempt', ok.attempt, 'at', clock_timestamp()))))
                                                WITH ORDINALITY AS a(e, n)
                                         ORDER BY n DESC LIMIT 10) last10))
                   END AS new_payload
              FROM ok
              -- Every exit, a handler's or maintenance's, routes by the queue's recorded policy (dlq_for); the
              -- flag passed in is only the caller's default for a queue with none.
              CROSS JOIN LATERAL (SELECT ${schema}.dlq_for(ok.queue, ok.dlq) AS dlq) dq
              JOIN ${schema}.ready_entries r
                ON r.ready_slot = ok.ready_slot AND r.queue = ok.queue AND r.priority = ok.priority
               AND r.enqueue_shard = ok.enqueue_shard AND r.lane_seq = ok.lane_seq
               AND r.ready_generation = ok.ready_generation AND r.job_id = ok.jid
        ),
        gone AS (
            DELETE FROM ${schema}.attempt_state a USING hyd WHERE a.job_id = hyd.jid AND a.run_lease = hyd.rl
        ),
        closure AS (
            INSERT INTO ${schema}.lease_claim_closure_batches (claim_slot, ready_slot, ready_generation, outcome,
                                                               closed_count, receipt_ids, receipt_ranges, closed_at)
            SELECT v_slot, h.ready_slot, h.ready_generation, h.label,
                   count(*), array_agg(h.rid ORDER BY h.rid), range_agg(int8range(h.rid, h.rid + 1)), clock_timestamp()
              FROM hyd h
             WHERE NOT h.row_local
             GROUP BY h.ready_slot, h.ready_generation, h.label
        ),
        explicit AS (
            INSERT INTO ${schema}.lease_claim_closures (claim_slot, job_id, run_lease, outcome, closed_at)
            SELECT v_slot, h.jid, h.rl, h.label, clock_timestamp() FROM hyd h WHERE h.row_local
        ),
        fence AS (
            UPDATE ${schema}.lease_claims c SET closed_at = clock_timestamp()
              FROM hyd h
             WHERE h.row_local AND c.claim_slot = v_slot AND c.job_id = h.jid AND c.run_lease = h.rl
        ),
        unleased AS (
            DELETE FROM ${schema}.leases l USING hyd h WHERE h.leased AND l.job_id = h.jid AND l.run_lease = h.rl
        ),
        terminal AS (
            INSERT INTO ${schema}.receipt_completion_batches (ready_slot, ready_generation, claim_slot, queue, priority,
                                                              enqueue_shard, completed_count, job_ids, run_leases,
                                                              lane_seqs, attempts, attempted_ats, finalized_at)
            SELECT h.ready_slot, h.ready_generation, v_slot, h.queue, h.priority, h.enqueue_shard, count(*),
                   array_agg(h.jid ORDER BY h.lane_seq, h.jid), array_agg(h.rl ORDER BY h.lane_seq, h.jid),
                   array_agg(h.lane_seq ORDER BY h.lane_seq, h.jid), array_agg(h.attempt ORDER BY h.lane_seq, h.jid),
                   array_agg(h.claimed_at ORDER BY h.lane_seq, h.jid), clock_timestamp()
              FROM hyd h
             WHERE h.disp = 'completed'
             GROUP BY h.ready_slot, h.ready_generation, h.queue, h.priority, h.enqueue_shard
        ),
        deferred AS (
            INSERT INTO ${schema}.deferred_jobs (job_id, kind, queue, args, state, priority, attempt, run_lease,
                                                 max_attempts, run_at, attempted_at, created_at, payload)
            SELECT h.jid, h.kind, h.queue, h.args,
                   (CASE WHEN h.disp = 'released' THEN 'scheduled' ELSE h.disp END)::${schema}.job_state, h.priority,
                   CASE WHEN h.disp IN ('scheduled', 'released') THEN greatest(h.attempt - 1, 0) ELSE h.attempt END,
                   h.rl, h.max_attempts,
                   clock_timestamp() + CASE WHEN h.disp = 'released' THEN interval '0'
                                            WHEN h.delay_ms IS NOT NULL THEN make_interval(secs => h.delay_ms / 1000.0)
                                            ELSE ${schema}.retry_backoff(h.queue, h.attempt) END,
                   h.claimed_at, h.created_at, h.new_payload
              FROM hyd h
             WHERE h.disp IN ('retryable', 'scheduled', 'released')
        ),
        done AS (
            INSERT INTO ${schema}.done_entries (ready_slot, ready_generation, job_id, kind, queue, state, priority,
                                                attempt, run_lease, lane_seq, enqueue_shard, attempted_at,
                                                finalized_at, payload)
            SELECT h.ready_slot, h.ready_generation, h.jid, h.kind, h.queue, h.disp::${schema}.job_state, h.priority,
                   h.attempt, h.rl, h.lane_seq, h.enqueue_shard, h.claimed_at, clock_timestamp(),
                   CASE WHEN h.new_payload IS DISTINCT FROM h.ready_payload THEN h.new_payload END
              FROM hyd h
             WHERE h.disp IN ('failed', 'cancelled')
        ),
        deltas AS (
            INSERT INTO ${schema}.queue_terminal_count_deltas (ready_slot, ready_generation, queue, priority,
                                                               enqueue_shard, counter_bucket, terminal_delta)
            SELECT h.ready_slot, h.ready_generation, h.queue, h.priority, h.enqueue_shard, (h.jid % 256)::smallint,
                   count(*)
              FROM hyd h
             WHERE h.disp IN ('failed', 'cancelled')
             GROUP BY h.ready_slot, h.ready_generation, h.queue, h.priority, h.enqueue_shard, (h.jid % 256)
        ),
        dlq AS (
            INSERT INTO ${schema}.dlq_entries (job_id, kind, queue, args, priority, attempt, run_lease, max_attempts,
                                               run_at, attempted_at, created_at, payload, dlq_reason, original_run_lease)
            SELECT h.jid, h.kind, h.queue, h.args, h.priority, h.attempt, h.rl, h.max_attempts, NULL, h.claimed_at,
                   h.created_at, h.new_payload,
                   CASE WHEN h.ex IN ('retry', 'rescue', 'deadline', 'callback_timeout') THEN 'attempts exhausted: '
                        ELSE 'failed: ' END
                       || coalesce(h.err, 'no reason given'),
                   h.rl
              FROM hyd h
             WHERE h.disp = 'dlq'
        )
        SELECT coalesce(array_agg(h.ord), '{}') AS ords, coalesce(array_agg(h.disp), '{}') AS disps INTO v_part FROM hyd h;
        v_done := v_done || v_part.ords;
        v_disp := v_disp || v_part.disps;
    END LOOP;

    -- Maintenance closed these attempts under their workers: tell the workers (delivered on commit), so a handler
    -- still running stops. Every rescue path closes through here, so this is the one place that signals.
    PERFORM pg_notify(${schema}.cancel_channel(), p_job_ids[u.o] || ':' || p_run_leases[u.o])
       FROM unnest(v_done) AS u(o)
      WHERE p_exits[u.o] IN ('rescue', 'deadline', 'callback_timeout');

    -- Released jobs go straight back to the ready ring (through the backlog row, in this same transaction) when
    -- their lane can be locked without waiting behind a producer transaction (try_lock_enqueue_shard). A released job whose
    -- lane is held keeps the backlog row written above, due now, and the next promotion tick after the lane frees
    -- moves it: the close never blocks on a producer, and the job is in exactly one place either way.
    IF 'released' = ANY (v_disp) THEN
        v_lane_q := '{}';
        v_lane_p := '{}';
        FOR v_lane IN
            SELECT DISTINCT d.queue, d.priority
              FROM ${schema}.deferred_jobs d
             WHERE d.job_id IN (SELECT p_job_ids[o] FROM unnest(v_done, v_disp) AS u(o, dp) WHERE u.dp = 'released')
               AND d.state = 'scheduled'
             ORDER BY d.queue, d.priority
        LOOP
            IF ${schema}.try_lock_enqueue_shard(v_lane.queue, v_lane.priority) THEN
                v_lane_q := v_lane_q || v_lane.queue;
                v_lane_p := v_lane_p || v_lane.priority;
            END IF;
        END LOOP;
        WITH back AS (
            DELETE FROM ${schema}.deferred_jobs d
             WHERE d.job_id IN (SELECT p_job_ids[o] FROM unnest(v_done, v_disp) AS u(o, dp) WHERE u.dp = 'released')
               AND d.state = 'scheduled'
               AND EXISTS (SELECT 1 FROM unnest(v_lane_q, v_lane_p) AS k(q, p) WHERE k.q = d.queue AND k.p = d.priority)
            RETURNING d.*
        )
        SELECT array_agg(job_id ORDER BY job_id) AS ids, array_agg(queue ORDER BY job_id) AS queues,
               array_agg(kind ORDER BY job_id) AS kinds, array_agg(args ORDER BY job_id) AS args,
               array_agg(priority ORDER BY job_id) AS prios, array_agg(max_attempts ORDER BY job_id) AS maxs,
               array_agg(attempt ORDER BY job_id) AS attempts, array_agg(run_lease ORDER BY job_id) AS leases,
               array_agg(payload ORDER BY job_id) AS payloads, array_agg(created_at ORDER BY job_id) AS created,
               array_agg(clock_timestamp() ORDER BY job_id) AS run_ats
          INTO v_back
          FROM back;
        PERFORM ${schema}.append_ready(v_back.ids, v_back.queues, v_back.kinds, v_back.args, v_back.prios, v_back.maxs,
                                       v_back.attempts, v_back.leases, v_back.payloads, v_back.created, v_back.run_ats);
    END IF;

    RETURN QUERY
    SELECT x.jid, x.rl,
           CASE WHEN x.ord = ANY (v_done) THEN 'applied'
                WHEN x.bid = 0 THEN
                    CASE WHEN EXISTS (SELECT 1 FROM ${schema}.lease_claims c
                                        JOIN ${schema}.lease_claim_closures e
                                          ON e.claim_slot = c.claim_slot AND e.job_id = c.job_id
                                         AND e.run_lease = c.run_lease
                                       WHERE c.claim_slot = x.cs AND c.job_id = x.jid AND c.run_lease = x.rl
                                         AND c.receipt_id = x.rid AND x.ex NOT IN ('rescue', 'deadline', 'callback_timeout')
                                         AND e.outcome = ${schema}.exit_disposition(x.ex, c.attempt, c.max_attempts,
                                                                                   ${schema}.dlq_for(c.queue, x.dlq)))
                              THEN 'applied_before'
                         WHEN EXISTS (SELECT 1 FROM ${schema}.lease_claims c
                                       WHERE c.claim_slot = x.cs AND c.job_id = x.jid AND c.run_lease = x.rl
                                         AND c.receipt_id = x.rid
                                         AND (c.closed_at IS NOT NULL
                                              OR EXISTS (SELECT 1 FROM ${schema}.lease_claim_closures e
                                                          WHERE e.claim_slot = c.claim_slot AND e.job_id = c.job_id
                                                            AND e.run_lease = c.run_lease))) THEN 'already_closed'
                         ELSE 'stale' END
                WHEN NOT EXISTS (SELECT 1 FROM ${schema}.lease_claim_batches b
                                  WHERE b.claim_slot = x.cs AND b.batch_id = x.bid
                                    AND x.idx BETWEEN 1 AND b.claimed_count AND b.job_ids[x.idx] = x.jid
                                    AND b.run_leases[x.idx] = x.rl AND b.receipt_ids[x.idx] = x.rid) THEN 'stale'
                WHEN EXISTS (SELECT 1 FROM ${schema}.lease_claim_batches b
                               JOIN ${schema}.lease_claim_closure_batches c
                                 ON c.claim_slot = b.claim_slot AND c.receipt_ranges @> x.rid
                              WHERE b.claim_slot = x.cs AND b.batch_id = x.bid
                                AND x.ex NOT IN ('rescue', 'deadline', 'callback_timeout')
                                AND c.outcome = ${schema}.exit_disposition(x.ex, b.attempts[x.idx], b.max_attempts[x.idx],
                                                                           ${schema}.dlq_for(b.queue, x.dlq)))
                     THEN 'applied_before'
                WHEN EXISTS (SELECT 1 FROM ${schema}.lease_claim_closure_batches c
                              WHERE c.claim_slot = x.cs AND c.receipt_ranges @> x.rid) THEN 'already_closed'
                ELSE 'stale' END,
           v_disp[array_position(v_done, x.ord)]
      FROM unnest(p_claim_slots, p_batch_ids, p_idxs, p_job_ids, p_run_leases, p_receipt_ids, p_exits, p_dlq)
           WITH ORDINALITY AS x(cs, bid, idx, jid, rl, rid, ex, dlq, ord)
     ORDER BY x.ord;
END
$$;
