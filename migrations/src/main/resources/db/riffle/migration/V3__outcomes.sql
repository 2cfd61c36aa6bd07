-- Every way an attempt can end other than success (DESIGN.md §5.4, §5.5, §6.3), plus the limits the API edge
-- enforces, backed here by CHECK constraints.

-- Names: 1..128 characters of [A-Za-z0-9_.:-], starting with a letter or digit (mirrors NewJob).
ALTER TABLE ${schema}.ready_entries
    ADD CONSTRAINT ready_entries_queue_name CHECK (queue ~ '^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$'),
    ADD CONSTRAINT ready_entries_kind_name CHECK (kind ~ '^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$');
ALTER TABLE ${schema}.deferred_jobs
    ADD CONSTRAINT deferred_jobs_queue_name CHECK (queue ~ '^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$'),
    ADD CONSTRAINT deferred_jobs_kind_name CHECK (kind ~ '^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$');
-- The engine's args limit is configurable (default 256 KiB, at most 64 MiB): the database backs the ceiling.
-- pg_column_size reads the stored size, so the check costs no re-serialization. run_at bounds mirror NewJob.
ALTER TABLE ${schema}.ready_entries
    ADD CONSTRAINT ready_entries_args_size CHECK (pg_column_size(args) <= 67108864),
    ADD CONSTRAINT ready_entries_run_at CHECK (run_at >= '2000-01-01' AND run_at < '2200-01-01');
ALTER TABLE ${schema}.deferred_jobs
    ADD CONSTRAINT deferred_jobs_args_size CHECK (pg_column_size(args) <= 67108864),
    ADD CONSTRAINT deferred_jobs_run_at CHECK (run_at >= '2000-01-01' AND run_at < '2200-01-01');

-- Backoff for a retry after consuming attempt n (1-based): 2^n s plus up to 25 % jitter, capped at 24 h.
CREATE FUNCTION ${schema}.retry_backoff(p_attempt int) RETURNS interval
LANGUAGE sql VOLATILE AS $$
    SELECT make_interval(secs => least(power(2, least(p_attempt, 30)) * (1 + random() * 0.25), 86400))
$$;

-- The payload with the attempt's last recorded progress (attempt_state.progress) merged in under "progress".
CREATE FUNCTION ${schema}.with_progress(p_payload jsonb, p_job_id bigint, p_run_lease bigint) RETURNS jsonb
LANGUAGE sql STABLE AS $$
    SELECT CASE WHEN a.progress IS NULL THEN p_payload
                ELSE jsonb_set(coalesce(p_payload, '{}'::jsonb), '{progress}', a.progress) END
      FROM (SELECT (SELECT progress FROM ${schema}.attempt_state s
                     WHERE s.job_id = p_job_id AND s.run_lease = p_run_lease) AS progress) a
$$;

-- How an exit routes, given the attempt's count and the queue's DLQ policy: one definition for every close path.
CREATE FUNCTION ${schema}.exit_disposition(p_exit text, p_attempt int, p_max_attempts int, p_dlq boolean) RETURNS text
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

-- Close open attempts of either claim shape, as one statement (DESIGN.md §5.3.3, §5.4, §2.7). This is the general
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
--        retry with none left, or fail -> narrow done_entries 'failed' (+ count delta), or dlq_entries when p_dlq;
--        snooze -> deferred 'scheduled' at now + delay, the attempt is given back;
--        cancel -> narrow done_entries 'cancelled' (+ count delta).
-- p_exits: 'complete' | 'retry' | 'snooze' | 'fail' | 'cancel', and for maintenance 'rescue' (stale worker),
-- 'deadline' (deadline expired) and 'callback_timeout', which route like a retry but label the closure 'rescued' /
-- 'deadline_expired' / 'callback_timeout' (a leased attempt is deadline-closed only while its lease runs past an
-- expired deadline: a lease parked on a callback has its deadline suspended); an exhausted
-- attempt reaching rescue goes to failure or the DLQ, never to another retry. 'release' is for attempts that were
-- claimed but never handed to a handler (shutdown, cancelled subscription): closure 'released', the attempt is
-- given back and the job is re-appended as ready at once, in the same transaction. run_lease is kept on every path, so the next claim's run lease
-- is higher than any evidence of this attempt. Returns per input position: status 'closed' | 'closed_before' |
-- 'already_closed' | 'stale', and the disposition written. 'closed_before' is only answered for a worker exit whose
-- attempt already carries exactly the closure this exit writes (a retried flush whose first try committed, or the
-- same exit sent twice); 'already_closed' means someone else (cancel, rescue, another exit) closed it first, so a
-- retried flush can tell its own earlier commit from a competing closer. Maintenance exits never see 'closed_before'.
CREATE FUNCTION ${schema}.close_attempts(p_claim_slots int[], p_batch_ids bigint[], p_idxs int[], p_job_ids bigint[],
                                         p_run_leases bigint[], p_receipt_ids bigint[], p_exits text[],
                                         p_delays_ms bigint[], p_errors text[], p_dlq boolean[],
                                         p_leased boolean[] DEFAULT '{}')
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
                   coalesce(x.leased, false) AS leased, x.ord
              FROM unnest(p_claim_slots, p_batch_ids, p_idxs, p_job_ids, p_run_leases, p_receipt_ids, p_exits,
                          p_delays_ms, p_errors, p_dlq, p_leased)
                   WITH ORDINALITY AS x(cs, bid, idx, jid, rl, rid, ex, delay_ms, err, dlq, leased, ord)
             WHERE x.cs = v_slot
             ORDER BY x.rid, x.ord
        ),
        ok AS MATERIALIZED (
            SELECT f.*, b.ready_slot, b.ready_generation, b.queue, b.priority, b.enqueue_shard,
                   b.lane_seqs[f.idx] AS lane_seq, b.attempts[f.idx] AS attempt, b.max_attempts[f.idx] AS max_attempts,
                   b.claimed_at, false AS row_local
              FROM f
              JOIN ${schema}.lease_claim_batches b ON b.claim_slot = v_slot AND b.batch_id = f.bid
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
                   -- attempt can resume from its checkpoint.
                   CASE WHEN ok.err IS NULL THEN ${schema}.with_progress(r.payload, ok.jid, ok.rl)
                        ELSE jsonb_set(coalesce(${schema}.with_progress(r.payload, ok.jid, ok.rl), '{}'::jsonb), '{errors}',
                               (SELECT coalesce(jsonb_agg(e ORDER BY n), '[]'::jsonb)
                                  FROM (SELECT e, n FROM jsonb_array_elements(
                                                coalesce(r.payload -> 'errors', '[]'::jsonb)
                                                || jsonb_build_array(jsonb_build_object('message', ok.err,
                                                       'attempt', ok.attempt, 'at', clock_timestamp())))
                                                WITH ORDINALITY AS a(e, n)
                                         ORDER BY n DESC LIMIT 10) last10))
                   END AS new_payload
              FROM ok
              -- Maintenance exits run in SQL and know only the engine default: a queue's own DLQ policy, recorded
              -- in queue_meta by the engines that configure it, takes precedence for them.
              CROSS JOIN LATERAL (SELECT CASE WHEN ok.ex IN ('rescue', 'deadline', 'callback_timeout')
                                              THEN coalesce((SELECT m.dlq_enabled FROM ${schema}.queue_meta m
                                                              WHERE m.queue = ok.queue), ok.dlq)
                                              ELSE ok.dlq END AS dlq) dq
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
                                            ELSE ${schema}.retry_backoff(h.attempt) END,
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
    PERFORM pg_notify('${schema_name}.cancel', p_job_ids[u.o] || ':' || p_run_leases[u.o])
       FROM unnest(v_done) AS u(o)
      WHERE p_exits[u.o] IN ('rescue', 'deadline', 'callback_timeout');

    -- Released jobs go straight back to the ready ring (through the backlog row, in this same transaction) when
    -- their lane can be locked without waiting behind a producer transaction (try_lock_lane). A released job whose
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
            IF ${schema}.try_lock_lane(v_lane.queue, v_lane.priority, 0::smallint) THEN
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
           CASE WHEN x.ord = ANY (v_done) THEN 'closed'
                WHEN x.bid = 0 THEN
                    CASE WHEN EXISTS (SELECT 1 FROM ${schema}.lease_claims c
                                        JOIN ${schema}.lease_claim_closures e
                                          ON e.claim_slot = c.claim_slot AND e.job_id = c.job_id
                                         AND e.run_lease = c.run_lease
                                       WHERE c.claim_slot = x.cs AND c.job_id = x.jid AND c.run_lease = x.rl
                                         AND c.receipt_id = x.rid AND x.ex NOT IN ('rescue', 'deadline', 'callback_timeout')
                                         AND e.outcome = ${schema}.exit_disposition(x.ex, c.attempt, c.max_attempts, x.dlq))
                              THEN 'closed_before'
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
                                                                           x.dlq)) THEN 'closed_before'
                WHEN EXISTS (SELECT 1 FROM ${schema}.lease_claim_closure_batches c
                              WHERE c.claim_slot = x.cs AND c.receipt_ranges @> x.rid) THEN 'already_closed'
                ELSE 'stale' END,
           v_disp[array_position(v_done, x.ord)]
      FROM unnest(p_claim_slots, p_batch_ids, p_idxs, p_job_ids, p_run_leases, p_receipt_ids, p_exits, p_dlq)
           WITH ORDINALITY AS x(cs, bid, idx, jid, rl, rid, ex, dlq, ord)
     ORDER BY x.ord;
END
$$;

-- Promote due deferred jobs into the ready ring (DESIGN.md §6.3): delete up to p_limit due rows (oldest first,
-- SKIP LOCKED so overlapping leaders never take the same row) and re-append them in the same transaction, so a
-- leader dying mid-batch loses nothing and duplicates nothing. Keeps job id, attempt, run_lease and payload.
-- Lane locks come first, through try_lock_lane, before any row lock: a lane held by an open producer transaction
-- is skipped, its due rows are not touched (not even row-locked) and wait for a later tick, and the selection is
-- repeated without the skipped lanes so that their backlog cannot fill the batch and starve every other lane.
-- Each pass adds at least one skipped lane or ends the loop.
CREATE FUNCTION ${schema}.promote_due(p_limit int) RETURNS int
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    v_q       text[] := '{}';
    v_p       smallint[] := '{}';
    v_skip_q  text[] := '{}';
    v_skip_p  smallint[] := '{}';
    v_skipped boolean;
    l         record;
    r         record;
BEGIN
    LOOP
        v_skipped := false;
        FOR l IN
            SELECT DISTINCT c.queue, c.priority
              FROM (SELECT dj.queue, dj.priority
                      FROM ${schema}.deferred_jobs dj
                      LEFT JOIN ${schema}.queue_meta m ON m.queue = dj.queue
                     WHERE dj.run_at <= clock_timestamp() AND m.paused IS NOT TRUE
                       AND NOT EXISTS (SELECT 1 FROM unnest(v_skip_q, v_skip_p) AS s(q, p)
                                        WHERE s.q = dj.queue AND s.p = dj.priority)
                     ORDER BY dj.run_at, dj.priority, dj.job_id
                     LIMIT p_limit) c
             WHERE NOT EXISTS (SELECT 1 FROM unnest(v_q, v_p) AS k(q, p) WHERE k.q = c.queue AND k.p = c.priority)
             ORDER BY c.queue, c.priority
        LOOP
            IF ${schema}.try_lock_lane(l.queue, l.priority, 0::smallint) THEN
                v_q := v_q || l.queue;
                v_p := v_p || l.priority;
            ELSE
                v_skip_q := v_skip_q || l.queue;
                v_skip_p := v_skip_p || l.priority;
                v_skipped := true;
            END IF;
        END LOOP;
        EXIT WHEN NOT v_skipped;
    END LOOP;

    WITH due AS (
        DELETE FROM ${schema}.deferred_jobs d
         WHERE d.job_id IN (SELECT dj.job_id
                              FROM ${schema}.deferred_jobs dj
                              LEFT JOIN ${schema}.queue_meta m ON m.queue = dj.queue
                             WHERE dj.run_at <= clock_timestamp() AND m.paused IS NOT TRUE
                               AND EXISTS (SELECT 1 FROM unnest(v_q, v_p) AS k(q, p)
                                            WHERE k.q = dj.queue AND k.p = dj.priority)
                             ORDER BY dj.run_at, dj.priority, dj.job_id
                             LIMIT p_limit
                               FOR UPDATE OF dj SKIP LOCKED)
        RETURNING d.*
    )
    SELECT array_agg(job_id ORDER BY run_at, job_id) AS ids, array_agg(queue ORDER BY run_at, job_id) AS queues,
           array_agg(kind ORDER BY run_at, job_id) AS kinds, array_agg(args ORDER BY run_at, job_id) AS args,
           array_agg(priority ORDER BY run_at, job_id) AS prios, array_agg(max_attempts ORDER BY run_at, job_id) AS maxs,
           array_agg(attempt ORDER BY run_at, job_id) AS attempts, array_agg(run_lease ORDER BY run_at, job_id) AS leases,
           array_agg(payload ORDER BY run_at, job_id) AS payloads, array_agg(created_at ORDER BY run_at, job_id) AS created,
           array_agg(clock_timestamp() ORDER BY run_at, job_id) AS run_ats
      INTO r
      FROM due;
    RETURN ${schema}.append_ready(r.ids, r.queues, r.kinds, r.args, r.prios, r.maxs, r.attempts, r.leases,
                                  r.payloads, r.created, r.run_ats);
END
$$;

-- Cancel a job by id (DESIGN.md §5.5, with both races designed out). Advisory locks come before row locks, as on
-- every other path (a completion or rescue holds an attempt lock and may wait on lane rows; a cancel holding a
-- claim head while queueing on that attempt lock closed a deadlock with it). Each try therefore:
--   0. looks without locking: the job's newest ready row and the attempt a claim of it creates (run lease + 1),
--      then takes the attempt locks of that attempt and of any attempt an earlier try found open, before any row
--      lock;
--   1. available: lock the lane's claim head (waiting for an in-flight claim to commit), then re-check in new
--      statements that the row is still unclaimed; tombstone it and record a narrow 'cancelled' terminal row. If a
--      claim won, its attempt is the one whose lock this try already holds, so branch 3 closes it;
--   2. scheduled/retryable: delete the deferred row and record a wide 'cancelled' terminal row in the current slot;
--   3. running: find the newest open receipt and, when this try holds its attempt lock, close it through
--      close_attempts (checks after the lock), and NOTIFY the cancel channel so the local subscriber can stop its
--      handler. An open attempt whose lock this try does not hold is left to the next try, which locks it first.
-- Returns 'available', 'scheduled', 'running' or 'not_found' (already terminal, or unknown). A job can move
-- between branches while this runs (promotion commits, or a running attempt's retry wins the attempt lock), so
-- when every branch comes up empty the branches are tried again, a bounded number of times, each with fresh
-- snapshots. Each try runs in its own subtransaction, and a try that finds nothing is rolled back on purpose: that
-- releases every lock it took (its claim head row included), so the next try again starts with advisory locks
-- only. A try that finds nothing has written nothing, so the rollback loses nothing.
CREATE FUNCTION ${schema}.cancel_job(p_job_id bigint) RETURNS text
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    r       record;
    d       record;
    o       record;
    v_cur   bigint;
    v_gen   bigint;
    v_slot  int;
    v_try   int;
    v_ready boolean;
    v_rls   bigint[];
    v_seen  bigint[] := '{}';
BEGIN
  FOR v_try IN 1 .. 3 LOOP
   BEGIN
    -- 0. look, then lock attempts (no row lock is held here: earlier tries were rolled back)
    SELECT re.ready_slot, re.ready_generation, re.queue, re.priority, re.enqueue_shard, re.lane_seq, re.kind,
           re.attempt, re.run_lease, h.seq_name
      INTO r
      FROM ${schema}.ready_entries re
      JOIN ${schema}.queue_claim_heads h
        ON h.queue = re.queue AND h.priority = re.priority AND h.enqueue_shard = re.enqueue_shard
     WHERE re.job_id = p_job_id
     ORDER BY re.ready_generation DESC, re.lane_seq DESC
     LIMIT 1;
    v_ready := FOUND;
    v_rls := v_seen;
    IF v_ready THEN
        v_rls := v_rls || (r.run_lease + 1);
    END IF;
    PERFORM ${schema}.lock_attempts(array_fill(p_job_id, ARRAY[cardinality(v_rls)]), v_rls);

    -- 1. available
    IF v_ready THEN
        PERFORM 1 FROM ${schema}.queue_claim_heads h WHERE h.seq_name = r.seq_name FOR UPDATE;
        v_cur := ${schema}.seq_next(r.seq_name);
        IF r.lane_seq >= v_cur
           AND NOT EXISTS (SELECT 1 FROM ${schema}.ready_tombstones t
                            WHERE t.ready_slot = r.ready_slot AND t.ready_generation = r.ready_generation
                              AND t.queue = r.queue AND t.priority = r.priority AND t.enqueue_shard = r.enqueue_shard
                              AND t.lane_seq = r.lane_seq)
           AND NOT EXISTS (SELECT 1 FROM ${schema}.ready_claim_attempt_batches e
                            WHERE e.ready_slot = r.ready_slot AND e.ready_generation = r.ready_generation
                              AND e.queue = r.queue AND e.priority = r.priority AND e.enqueue_shard = r.enqueue_shard
                              AND e.first_lane_seq <= r.lane_seq AND e.next_lane_seq > r.lane_seq
                              AND e.lane_ranges @> r.lane_seq) THEN
            INSERT INTO ${schema}.ready_tombstones (ready_slot, ready_generation, queue, priority, enqueue_shard, lane_seq, job_id)
            VALUES (r.ready_slot, r.ready_generation, r.queue, r.priority, r.enqueue_shard, r.lane_seq, p_job_id);
            INSERT INTO ${schema}.done_entries (ready_slot, ready_generation, job_id, kind, queue, state, priority, attempt,
                                                run_lease, lane_seq, enqueue_shard, finalized_at)
            VALUES (r.ready_slot, r.ready_generation, p_job_id, r.kind, r.queue, 'cancelled', r.priority, r.attempt,
                    r.run_lease, r.lane_seq, r.enqueue_shard, clock_timestamp());
            INSERT INTO ${schema}.queue_terminal_count_deltas (ready_slot, ready_generation, queue, priority,
                                                               enqueue_shard, counter_bucket, terminal_delta)
            VALUES (r.ready_slot, r.ready_generation, r.queue, r.priority, r.enqueue_shard, (p_job_id % 256)::smallint, 1);
            RETURN 'available';
        END IF;
    END IF;

    -- 2. scheduled or retryable
    DELETE FROM ${schema}.deferred_jobs dj WHERE dj.job_id = p_job_id RETURNING dj.* INTO d;
    IF FOUND THEN
        SELECT rr.slot, rr.generation INTO v_slot, v_gen
          FROM ${schema}.queue_ring_rotations rr ORDER BY rr.generation DESC LIMIT 1;
        INSERT INTO ${schema}.done_entries (ready_slot, ready_generation, job_id, kind, queue, state, priority, attempt,
                                            run_lease, lane_seq, enqueue_shard, attempted_at, finalized_at, args,
                                            max_attempts, run_at, created_at, payload)
        VALUES (v_slot, v_gen, p_job_id, d.kind, d.queue, 'cancelled', d.priority, d.attempt, d.run_lease, -p_job_id, 0,
                d.attempted_at, clock_timestamp(), d.args, d.max_attempts, d.run_at, d.created_at, d.payload);
        INSERT INTO ${schema}.queue_terminal_count_deltas (ready_slot, ready_generation, queue, priority,
                                                           enqueue_shard, counter_bucket, terminal_delta)
        VALUES (v_slot, v_gen, d.queue, d.priority, 0, (p_job_id % 256)::smallint, 1);
        RETURN 'scheduled';
    END IF;

    -- 3. running: the newest open receipt of the job, compact or row-local (cold path: scans the retained ring),
    -- and whether a lease manages it (close_attempts re-checks both under the attempt's lock).
    SELECT x.*, EXISTS (SELECT 1 FROM ${schema}.leases l WHERE l.job_id = p_job_id AND l.run_lease = x.rl) AS leased
      INTO o
      FROM (SELECT b.claim_slot, b.batch_id, i.idx::int AS idx, i.rl, i.rid
              FROM ${schema}.lease_claim_batches b
             CROSS JOIN LATERAL unnest(b.job_ids, b.run_leases, b.receipt_ids) WITH ORDINALITY AS i(jid, rl, rid, idx)
             WHERE b.job_ids @> ARRAY[p_job_id] AND i.jid = p_job_id
               AND NOT EXISTS (SELECT 1 FROM ${schema}.lease_claim_closure_batches c
                                WHERE c.claim_slot = b.claim_slot AND c.receipt_ranges @> i.rid)
            UNION ALL
            SELECT c.claim_slot, 0::bigint, 0, c.run_lease, c.receipt_id
              FROM ${schema}.lease_claims c
             WHERE c.job_id = p_job_id AND c.closed_at IS NULL
               AND NOT EXISTS (SELECT 1 FROM ${schema}.lease_claim_closures e
                                WHERE e.claim_slot = c.claim_slot AND e.job_id = c.job_id AND e.run_lease = c.run_lease)) x
     ORDER BY x.rl DESC
     LIMIT 1;
    IF FOUND THEN
        IF o.rl = ANY (v_rls) THEN
            -- close_attempts re-takes the lock this try already holds: no new wait after the row locks above.
            PERFORM 1 FROM ${schema}.close_attempts(ARRAY[o.claim_slot], ARRAY[o.batch_id], ARRAY[o.idx], ARRAY[p_job_id],
                                                     ARRAY[o.rl], ARRAY[o.rid], ARRAY['cancel'], ARRAY[NULL::bigint],
                                                     ARRAY['cancelled by operator'], ARRAY[false], ARRAY[o.leased]) c
             WHERE c.status = 'closed';
            IF FOUND THEN
                PERFORM pg_notify('${schema_name}.cancel', p_job_id || ':' || o.rl);
                RETURN 'running';
            END IF;
        ELSE
            -- Plpgsql variables survive the rollback below: the next try locks this attempt first.
            v_seen := v_seen || o.rl;
        END IF;
    END IF;
    -- Nothing found: undo this try's locks (see the header). The condition is raised only here and caught only here.
    RAISE EXCEPTION USING ERRCODE = 'RFC01', MESSAGE = 'cancel_job: retry';
   EXCEPTION WHEN SQLSTATE 'RFC01' THEN
    NULL;
   END;
  END LOOP;
    RETURN 'not_found';
END
$$;

-- DLQ retry: move entries back to the ready ring with attempt 0 and their run_lease kept (so the next claim's run
-- lease is higher than every earlier attempt's evidence). Returns the retried job ids: every requested entry that
-- was in the DLQ, and only those.
-- An entry whose lane is held by an open producer transaction (try_lock_lane) is not waited for and not refused:
-- it leaves the DLQ all the same, into the backlog as 'scheduled', due now, and the first promotion tick after the
-- lane frees makes it ready. So the admin call never blocks behind a producer and never silently does nothing: a
-- returned id has left the DLQ and will run, either at once or as soon as its lane is free.
CREATE FUNCTION ${schema}.dlq_retry(p_job_ids bigint[]) RETURNS SETOF bigint
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    r     record;
    l     record;
    v_q   text[] := '{}';
    v_p   smallint[] := '{}';
BEGIN
    -- Lane locks before the DLQ row locks the DELETE below takes.
    FOR l IN
        SELECT DISTINCT d.queue, d.priority FROM ${schema}.dlq_entries d
         WHERE d.job_id = ANY (p_job_ids) ORDER BY d.queue, d.priority
    LOOP
        IF ${schema}.try_lock_lane(l.queue, l.priority, 0::smallint) THEN
            v_q := v_q || l.queue;
            v_p := v_p || l.priority;
        END IF;
    END LOOP;

    WITH moved AS (
        DELETE FROM ${schema}.dlq_entries d WHERE d.job_id = ANY (p_job_ids) RETURNING d.*
    ),
    parked AS (
        INSERT INTO ${schema}.deferred_jobs (job_id, kind, queue, args, state, priority, attempt, run_lease,
                                             max_attempts, run_at, attempted_at, created_at, payload)
        SELECT m.job_id, m.kind, m.queue, m.args, 'scheduled', m.priority, 0, m.run_lease, m.max_attempts,
               clock_timestamp(), m.attempted_at, m.created_at, m.payload
          FROM moved m
         WHERE NOT EXISTS (SELECT 1 FROM unnest(v_q, v_p) AS k(q, p) WHERE k.q = m.queue AND k.p = m.priority)
        RETURNING job_id
    )
    SELECT (SELECT array_agg(job_id ORDER BY job_id) FROM moved) AS all_ids,
           array_agg(job_id ORDER BY job_id) AS ids, array_agg(queue ORDER BY job_id) AS queues,
           array_agg(kind ORDER BY job_id) AS kinds, array_agg(args ORDER BY job_id) AS args,
           array_agg(priority ORDER BY job_id) AS prios, array_agg(max_attempts ORDER BY job_id) AS maxs,
           array_agg(0::smallint ORDER BY job_id) AS attempts, array_agg(run_lease ORDER BY job_id) AS leases,
           array_agg(payload ORDER BY job_id) AS payloads, array_agg(created_at ORDER BY job_id) AS created,
           array_agg(clock_timestamp() ORDER BY job_id) AS run_ats
      INTO r
      FROM moved m
     WHERE EXISTS (SELECT 1 FROM unnest(v_q, v_p) AS k(q, p) WHERE k.q = m.queue AND k.p = m.priority);
    PERFORM ${schema}.append_ready(r.ids, r.queues, r.kinds, r.args, r.prios, r.maxs, r.attempts, r.leases,
                                   r.payloads, r.created, r.run_ats);
    RETURN QUERY SELECT unnest(coalesce(r.all_ids, '{}'));
END
$$;
