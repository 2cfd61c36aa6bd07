-- Admin writes: cancel a job, retry DLQ entries.
-- Repeatable migration (docs/adr/0007): functions only, each as CREATE OR REPLACE, re-applied by Flyway
-- whenever this file changes. Tables, types and indexes live in the versioned V__ files; a function whose
-- signature changes is dropped there first.

-- Cancel a job by id (docs/design/delivery-contract.md, with both races designed out). Advisory locks come before row locks, as on
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
CREATE OR REPLACE FUNCTION ${schema}.cancel_job(p_job_id bigint) RETURNS text
LANGUAGE plpgsql VOLATILE SET plan_cache_mode = force_custom_plan AS $$
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
     -- The job's latest ready row: every re-append (retry, release, promotion, rescue) carries a run_lease above
     -- all earlier rows of the job. Lane positions do not order them: the rows may sit on different shards.
     ORDER BY re.run_lease DESC, re.ready_generation DESC, re.lane_seq DESC
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
             WHERE c.status = 'applied';
            IF FOUND THEN
                PERFORM pg_notify(${schema}.cancel_channel(), p_job_id || ':' || o.rl);
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
-- An entry whose lane is held by an open producer transaction (try_lock_enqueue_shard) is not waited for and not refused:
-- it leaves the DLQ all the same, into the backlog as 'scheduled', due now, and the first promotion tick after the
-- lane frees makes it ready. So the admin call never blocks behind a producer and never silently does nothing: a
-- returned id has left the DLQ and will run, either at once or as soon as its lane is free.
CREATE OR REPLACE FUNCTION ${schema}.dlq_retry(p_job_ids bigint[]) RETURNS SETOF bigint
LANGUAGE plpgsql VOLATILE SET plan_cache_mode = force_custom_plan AS $$
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
        IF ${schema}.try_lock_enqueue_shard(l.queue, l.priority) THEN
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
