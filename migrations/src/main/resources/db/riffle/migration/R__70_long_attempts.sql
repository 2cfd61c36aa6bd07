-- Long attempts: heartbeat evidence, materialized leases and external-wait callbacks.
-- Repeatable migration (docs/adr/0007): functions only, each as CREATE OR REPLACE, re-applied by Flyway
-- whenever this file changes. Tables, types and indexes live in the versioned V__ files; a function whose
-- signature changes is dropped there first.

-- Materialized leases and external-wait callbacks (docs/design/storage-planes.md; lease-side rescue: R__50_rescue.sql).
-- A lease is the mutable half of a long attempt; its receipt (compact item or row-local claim) stays open until the
-- attempt really ends, and every write that ends or changes an attempt takes the per-attempt advisory lock first
-- and looks in a later statement (docs/design/lock-order.md).

-- Step F of a claim for a materialized queue (claim_ready; docs/design/storage-planes.md, ADR
-- docs/adr/0004-materialized-leases-and-row-local-claims.md), on a lane that select_claim_lane (R__30_claim.sql)
-- locked and healed: take the next p_limit rows of the lane from p_from_lane_seq in the ready slot p_ready_slot,
-- append the one ready_claim_attempt_batches row of claim evidence, and per job one row-local lease_claims receipt
-- in the current claim slot plus one 'running' leases row in the current lease slot (heartbeat and attempted_at =
-- claimed_at). No compact batch row is written, so each receipt has exactly one claim shape; batch_id 0 in the
-- lease and in the rows returned means row-local. It lives here, with the leases, although claim_ready in
-- R__30_claim.sql calls it: plpgsql resolves the functions it calls at run time, so the load order of the two files
-- does not matter (docs/adr/0007). The sel, items and evidence parts of its statement are the same text as in
-- claim_compact (R__30_claim.sql), whose comment explains the lane_seq bound; ClaimTemplatesTest holds them equal.
CREATE OR REPLACE FUNCTION ${schema}.claim_materialized(p_queue text, p_priority smallint, p_shard smallint,
                                             p_ready_slot int, p_ready_generation bigint, p_from_lane_seq bigint,
                                             p_limit int, p_deadline_secs int)
RETURNS TABLE (status text, job_id bigint, kind text, queue text, args jsonb, priority smallint, attempt smallint,
               run_lease bigint, max_attempts smallint, lane_seq bigint, enqueue_shard smallint, ready_slot int,
               ready_generation bigint, claim_slot int, batch_id bigint, batch_index int, receipt_id bigint,
               claimed_at timestamptz, deadline_at timestamptz, created_at timestamptz, payload jsonb, lease_slot int)
LANGUAGE plpgsql VOLATILE SET plan_cache_mode = force_generic_plan SET enable_seqscan = off AS $$
#variable_conflict use_column
DECLARE
    v_claimed_at timestamptz;
    v_deadline   timestamptz;
    v_claim_slot int;
    v_lease_slot int;
    v_lease_gen  bigint;
BEGIN
    v_claimed_at := clock_timestamp();
    v_deadline   := CASE WHEN p_deadline_secs > 0 THEN v_claimed_at + make_interval(secs => p_deadline_secs) END;
    SELECT cr.slot INTO v_claim_slot FROM ${schema}.claim_ring_rotations cr ORDER BY cr.generation DESC LIMIT 1;
    SELECT lr.slot, lr.generation INTO v_lease_slot, v_lease_gen
      FROM ${schema}.lease_ring_rotations lr ORDER BY lr.generation DESC LIMIT 1;

    RETURN QUERY EXECUTE format($q$
    WITH sel AS MATERIALIZED (
        SELECT r.job_id, r.kind, r.args, r.attempt, r.run_lease, r.max_attempts, r.lane_seq, r.created_at, r.payload
          FROM %1$s.%2$I r
         WHERE r.ready_slot = $7 AND r.queue = $1 AND r.priority = $2 AND r.enqueue_shard = $3 AND r.lane_seq >= $4
           AND r.lane_seq < $4 + 2 * $6 AND r.ready_generation = $5
           AND r.lane_seq <> ALL (ARRAY(SELECT t.lane_seq FROM %1$s.%3$I t
                                         WHERE t.ready_slot = $7 AND t.queue = $1 AND t.priority = $2
                                           AND t.enqueue_shard = $3 AND t.lane_seq >= $4
                                           AND t.lane_seq < $4 + 2 * $6 AND t.ready_generation = $5))
         ORDER BY r.lane_seq
         LIMIT $6
    ),
    items AS MATERIALIZED (
        SELECT s.*, nextval('%1$s.lease_claim_receipt_id_seq') AS rid,
               (row_number() OVER (ORDER BY s.lane_seq))::int AS idx
          FROM sel s
    ),
    evidence AS (
        INSERT INTO %1$s.%4$I (ready_slot, ready_generation, queue, priority, enqueue_shard, claim_slot,
                               first_lane_seq, next_lane_seq, claimed_count, lane_ranges, claimed_at)
        SELECT $7, $5, $1, $2, $3, $8, min(i.lane_seq), max(i.lane_seq) + 1, count(*),
               range_agg(int8range(i.lane_seq, i.lane_seq + 1)), $9
          FROM items i
        HAVING count(*) > 0
    ),
    receipts AS (
        INSERT INTO %1$s.%5$I (claim_slot, job_id, run_lease, receipt_id, ready_slot, ready_generation, queue,
                               priority, enqueue_shard, lane_seq, attempt, max_attempts, claimed_at,
                               materialized_at, deadline_at)
        SELECT $8, i.job_id, i.run_lease + 1, i.rid, $7, $5, $1, $2, $3, i.lane_seq, (i.attempt + 1)::smallint,
               i.max_attempts, $9, $9, $10
          FROM items i
    ),
    leased AS (
        INSERT INTO %1$s.%6$I (lease_slot, lease_generation, ready_slot, ready_generation, job_id, queue, state,
                               priority, attempt, run_lease, max_attempts, lane_seq, enqueue_shard, heartbeat_at,
                               deadline_at, attempted_at, claim_slot, receipt_id, batch_id, batch_index)
        SELECT $11, $12, $7, $5, i.job_id, $1, 'running', $2, (i.attempt + 1)::smallint, i.run_lease + 1,
               i.max_attempts, i.lane_seq, $3, $9, $10, $9, $8, i.rid, 0, 0
          FROM items i
    )
    SELECT 'claimed'::text, i.job_id, i.kind, $1, i.args, $2, (i.attempt + 1)::smallint, i.run_lease + 1,
           i.max_attempts, i.lane_seq, $3, $7, $5, $8, 0::bigint, 0, i.rid, $9, $10, i.created_at, i.payload, $11
      FROM items i
     ORDER BY i.idx
    $q$, '${schema}', 'ready_entries_' || p_ready_slot, 'ready_tombstones_' || p_ready_slot,
         'ready_claim_attempt_batches_' || p_ready_slot, 'lease_claims_' || v_claim_slot, 'leases_' || v_lease_slot)
    USING p_queue, p_priority, p_shard, p_from_lane_seq, p_ready_generation, p_limit, p_ready_slot, v_claim_slot,
          v_claimed_at, v_deadline, v_lease_slot, v_lease_gen;
END
$$;

-- Heartbeat evidence for long attempts (docs/design/delivery-contract.md): per-attempt locks first, then in a new statement upsert
-- attempt_state only for attempts whose receipt (compact item, or row-local claim not yet fenced) is still open. One statement for all of a process's
-- long-running attempts, carrying buffered progress where there is some (NULL keeps the stored progress); short
-- jobs never get a row. Returns the attempts that were recorded.
CREATE OR REPLACE FUNCTION ${schema}.heartbeat(p_claim_slots int[], p_job_ids bigint[], p_run_leases bigint[],
                                    p_receipt_ids bigint[], p_progress jsonb[])
RETURNS TABLE (job_id bigint, run_lease bigint)
LANGUAGE plpgsql VOLATILE SET plan_cache_mode = force_custom_plan AS $$
#variable_conflict use_column
DECLARE
    v_slot int;
BEGIN
    PERFORM ${schema}.lock_attempts(p_job_ids, p_run_leases);
    FOR v_slot IN SELECT DISTINCT s FROM unnest(p_claim_slots) s ORDER BY 1 LOOP
        CONTINUE WHEN to_regclass(format('%s.%I', '${schema}', 'lease_claim_batches_' || v_slot)) IS NULL;
        RETURN QUERY EXECUTE format($q$
            INSERT INTO %1$s.attempt_state AS a (job_id, run_lease, heartbeat_at, progress, updated_at)
            SELECT x.jid, x.rl, clock_timestamp(), x.progress, clock_timestamp()
              FROM unnest($1::int[], $2::bigint[], $3::bigint[], $4::bigint[], $5::jsonb[]) AS x(cs, jid, rl, rid, progress)
             WHERE x.cs = $6
               AND ((NOT EXISTS (SELECT 1 FROM %1$s.%2$I c WHERE c.receipt_ranges @> x.rid)
                     AND EXISTS (SELECT 1 FROM %1$s.%3$I b WHERE b.receipt_ranges @> x.rid))
                    OR EXISTS (SELECT 1 FROM %1$s.%4$I r WHERE r.claim_slot = $6 AND r.job_id = x.jid AND r.run_lease = x.rl
                                  AND r.receipt_id = x.rid AND r.closed_at IS NULL))
            ON CONFLICT (job_id, run_lease) DO UPDATE
               SET heartbeat_at = excluded.heartbeat_at, updated_at = excluded.updated_at,
                   progress = coalesce(excluded.progress, a.progress)
            RETURNING a.job_id, a.run_lease
            $q$, '${schema}', 'lease_claim_closure_batches_' || v_slot, 'lease_claim_batches_' || v_slot,
                 'lease_claims_' || v_slot)
           USING p_claim_slots, p_job_ids, p_run_leases, p_receipt_ids, p_progress, v_slot;
    END LOOP;
END
$$;

-- Materialize a compact attempt on demand and register a callback on it, or register one on an existing running
-- lease (materialized at claim time). The lease goes into the lease slot current NOW, copying the claim
-- (state 'running', heartbeat now, the batch's deadline, attempted_at = claimed_at). The receipt stays open.
-- Returns status 'registered' | 'waiting' (already parked on another callback) | 'closed' | 'stale'.
CREATE OR REPLACE FUNCTION ${schema}.register_callback(p_claim_slot int, p_batch_id bigint, p_idx int, p_job_id bigint,
                                            p_run_lease bigint, p_receipt_id bigint, p_timeout_secs double precision)
RETURNS TABLE (status text, callback_id uuid, timeout_at timestamptz, lease_slot int)
LANGUAGE plpgsql VOLATILE SET plan_cache_mode = force_custom_plan AS $$
#variable_conflict use_column
DECLARE
    v_id      uuid := gen_random_uuid();
    v_timeout timestamptz;
    v_lease   record;
    v_claim   record;
    v_closed  boolean;
BEGIN
    PERFORM ${schema}.lock_attempts(ARRAY[p_job_id], ARRAY[p_run_lease]);
    v_timeout := clock_timestamp() + make_interval(secs => p_timeout_secs);

    UPDATE ${schema}.leases l SET callback_id = v_id, callback_timeout_at = v_timeout
     WHERE l.job_id = p_job_id AND l.run_lease = p_run_lease AND l.state = 'running'
    RETURNING l.lease_slot INTO v_lease;
    IF FOUND THEN
        RETURN QUERY SELECT 'registered'::text, v_id, v_timeout, v_lease.lease_slot;
        RETURN;
    END IF;
    IF EXISTS (SELECT 1 FROM ${schema}.leases l WHERE l.job_id = p_job_id AND l.run_lease = p_run_lease) THEN
        RETURN QUERY SELECT 'waiting'::text, NULL::uuid, NULL::timestamptz, NULL::int;
        RETURN;
    END IF;
    IF p_batch_id = 0 OR to_regclass(format('%s.%I', '${schema}', 'lease_claim_batches_' || p_claim_slot)) IS NULL THEN
        -- A row-local claim always has its lease until it closes; no lease means it is closed (or never was).
        RETURN QUERY SELECT CASE WHEN EXISTS (SELECT 1 FROM ${schema}.lease_claims c
                                               WHERE c.claim_slot = p_claim_slot AND c.job_id = p_job_id
                                                 AND c.run_lease = p_run_lease AND c.closed_at IS NOT NULL)
                                 THEN 'closed' ELSE 'stale' END, NULL::uuid, NULL::timestamptz, NULL::int;
        RETURN;
    END IF;

    EXECUTE format($q$
        SELECT b.ready_slot, b.ready_generation, b.queue, b.priority, b.enqueue_shard, b.lane_seqs[$2] AS lane_seq,
               b.attempts[$2] AS attempt, b.max_attempts[$2] AS max_attempts, b.deadline_at, b.claimed_at
          FROM %1$s.%2$I b
         WHERE b.claim_slot = $6 AND b.batch_id = $1 AND $2 BETWEEN 1 AND b.claimed_count
           AND b.job_ids[$2] = $3 AND b.run_leases[$2] = $4 AND b.receipt_ids[$2] = $5
        $q$, '${schema}', 'lease_claim_batches_' || p_claim_slot)
       INTO v_claim USING p_batch_id, p_idx, p_job_id, p_run_lease, p_receipt_id, p_claim_slot;
    IF v_claim.ready_slot IS NULL THEN
        RETURN QUERY SELECT 'stale'::text, NULL::uuid, NULL::timestamptz, NULL::int;
        RETURN;
    END IF;
    EXECUTE format('SELECT EXISTS (SELECT 1 FROM %s.%I c WHERE c.receipt_ranges @> $1)',
                   '${schema}', 'lease_claim_closure_batches_' || p_claim_slot)
       INTO v_closed USING p_receipt_id;
    IF v_closed THEN
        RETURN QUERY SELECT 'closed'::text, NULL::uuid, NULL::timestamptz, NULL::int;
        RETURN;
    END IF;

    SELECT lr.slot, lr.generation INTO v_lease FROM ${schema}.lease_ring_rotations lr ORDER BY lr.generation DESC LIMIT 1;
    EXECUTE format($q$
        INSERT INTO %1$s.%2$I (lease_slot, lease_generation, ready_slot, ready_generation, job_id, queue, state,
                               priority, attempt, run_lease, max_attempts, lane_seq, enqueue_shard, heartbeat_at,
                               deadline_at, attempted_at, callback_id, callback_timeout_at, claim_slot, receipt_id,
                               batch_id, batch_index)
        VALUES ($1, $2, $3, $4, $5, $6, 'running', $7, $8, $9, $10, $11, $12, clock_timestamp(), $13, $14, $15, $16,
                $17, $18, $19, $20)
        $q$, '${schema}', 'leases_' || v_lease.slot)
       USING v_lease.slot, v_lease.generation, v_claim.ready_slot, v_claim.ready_generation, p_job_id, v_claim.queue,
             v_claim.priority, v_claim.attempt, p_run_lease, v_claim.max_attempts, v_claim.lane_seq,
             v_claim.enqueue_shard, v_claim.deadline_at, v_claim.claimed_at, v_id, v_timeout, p_claim_slot,
             p_receipt_id, p_batch_id, p_idx;
    RETURN QUERY SELECT 'registered'::text, v_id, v_timeout, v_lease.slot;
END
$$;

-- The recorded resolution of a callback, if any: attempt_state.callback_result holds {callback_id, payload}.
CREATE OR REPLACE FUNCTION ${schema}.callback_resolution(p_job_id bigint, p_run_lease bigint, p_callback_id uuid) RETURNS jsonb
LANGUAGE sql STABLE AS $$
    SELECT a.callback_result -> 'payload'
      FROM ${schema}.attempt_state a
     WHERE a.job_id = p_job_id AND a.run_lease = p_run_lease AND a.callback_result ->> 'callback_id' = p_callback_id::text
$$;

-- Park the attempt on its callback: the lease waits (state 'waiting_external'; heartbeat and deadline suspended,
-- so neither stale nor deadline rescue touches it; callback-timeout rescue does). If the callback was resolved
-- before the handler parked, nothing changes and the resolution is returned.
-- Returns status 'waiting' | 'resolved' (with payload) | 'gone' (timed out, or the attempt ended).
CREATE OR REPLACE FUNCTION ${schema}.park_callback(p_job_id bigint, p_run_lease bigint, p_callback_id uuid)
RETURNS TABLE (status text, payload jsonb)
LANGUAGE plpgsql VOLATILE SET plan_cache_mode = force_custom_plan AS $$
#variable_conflict use_column
DECLARE
    v_payload jsonb;
BEGIN
    PERFORM ${schema}.lock_attempts(ARRAY[p_job_id], ARRAY[p_run_lease]);
    UPDATE ${schema}.leases l SET state = 'waiting_external', heartbeat_at = NULL, deadline_at = NULL
     WHERE l.job_id = p_job_id AND l.run_lease = p_run_lease AND l.callback_id = p_callback_id;
    IF FOUND THEN
        RETURN QUERY SELECT 'waiting'::text, NULL::jsonb;
        RETURN;
    END IF;
    v_payload := ${schema}.callback_resolution(p_job_id, p_run_lease, p_callback_id);
    RETURN QUERY SELECT CASE WHEN v_payload IS NULL THEN 'gone' ELSE 'resolved' END, v_payload;
END
$$;

-- Where a parked callback stands (read only): 'resolved' (with payload) | 'waiting' | 'gone'.
CREATE OR REPLACE FUNCTION ${schema}.callback_status(p_job_id bigint, p_run_lease bigint, p_callback_id uuid)
RETURNS TABLE (status text, payload jsonb)
LANGUAGE plpgsql STABLE SET plan_cache_mode = force_custom_plan AS $$
#variable_conflict use_column
DECLARE
    v_payload jsonb := ${schema}.callback_resolution(p_job_id, p_run_lease, p_callback_id);
BEGIN
    IF v_payload IS NOT NULL THEN
        RETURN QUERY SELECT 'resolved'::text, v_payload;
    ELSIF EXISTS (SELECT 1 FROM ${schema}.leases l
                   WHERE l.job_id = p_job_id AND l.run_lease = p_run_lease AND l.callback_id = p_callback_id) THEN
        RETURN QUERY SELECT 'waiting'::text, NULL::jsonb;
    ELSE
        RETURN QUERY SELECT 'gone'::text, NULL::jsonb;
    END IF;
END
$$;

-- Resolve a callback from any process: at most one resolution wins. Find the lease by callback id, take the
-- attempt's lock, then in a new statement move the lease back to 'running' (fresh heartbeat, callback cleared)
-- only if it still carries this callback id; record {callback_id, payload} in attempt_state and NOTIFY the
-- callback channel so the parked handler wakes. Returns 'resumed' | 'already_resolved' | 'not_found'.
CREATE OR REPLACE FUNCTION ${schema}.resume_external(p_callback_id uuid, p_payload jsonb) RETURNS text
LANGUAGE plpgsql VOLATILE SET plan_cache_mode = force_custom_plan AS $$
DECLARE
    l record;
BEGIN
    SELECT x.job_id, x.run_lease INTO l FROM ${schema}.leases x WHERE x.callback_id = p_callback_id LIMIT 1;
    IF FOUND THEN
        PERFORM ${schema}.lock_attempts(ARRAY[l.job_id], ARRAY[l.run_lease]);
        UPDATE ${schema}.leases x
           SET state = 'running', callback_id = NULL, callback_timeout_at = NULL, heartbeat_at = clock_timestamp()
         WHERE x.job_id = l.job_id AND x.run_lease = l.run_lease AND x.callback_id = p_callback_id;
        IF FOUND THEN
            INSERT INTO ${schema}.attempt_state AS a (job_id, run_lease, callback_result, updated_at)
            VALUES (l.job_id, l.run_lease, jsonb_build_object('callback_id', p_callback_id::text, 'payload', p_payload),
                    clock_timestamp())
            ON CONFLICT (job_id, run_lease) DO UPDATE
               SET callback_result = excluded.callback_result, updated_at = excluded.updated_at;
            PERFORM pg_notify(${schema}.callback_channel(), p_callback_id::text);
            RETURN 'resumed';
        END IF;
    END IF;
    IF EXISTS (SELECT 1 FROM ${schema}.attempt_state a WHERE a.callback_result ->> 'callback_id' = p_callback_id::text) THEN
        RETURN 'already_resolved';
    END IF;
    RETURN 'not_found';
END
$$;
