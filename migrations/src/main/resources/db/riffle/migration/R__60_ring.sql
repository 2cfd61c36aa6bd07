-- Rings: rotation, the inertness proofs and prune.
-- Repeatable migration (docs/adr/0007): functions only, each as CREATE OR REPLACE, re-applied by Flyway
-- whenever this file changes. Tables, types and indexes live in the versioned V__ files; a function whose
-- signature changes is dropped there first.

-- Maintenance (docs/design/maintenance.md). Every function is safe when two leaders overlap: rotation and prune serialize on a
-- per-ring advisory lock.
-- Lock order everywhere: ring advisory lock -> ring slot row -> child ACCESS EXCLUSIVE (docs/design/lock-order.md).

-- The families (partitioned tables) of each ring.
CREATE OR REPLACE FUNCTION ${schema}.ring_families(p_ring text) RETURNS text[]
LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE p_ring
        WHEN 'queue' THEN ARRAY['ready_entries', 'ready_segments', 'ready_tombstones', 'ready_claim_attempt_batches',
                                'done_entries', 'receipt_completion_batches', 'receipt_completion_tombstones',
                                'queue_terminal_count_deltas']
        WHEN 'claim' THEN ARRAY['lease_claims', 'lease_claim_batches', 'lease_claim_closures', 'lease_claim_closure_batches']
        WHEN 'lease' THEN ARRAY['leases']
    END
$$;

CREATE OR REPLACE FUNCTION ${schema}.ring_slot_count(p_ring text) RETURNS int
LANGUAGE plpgsql STABLE AS $$
DECLARE
    n int;
BEGIN
    EXECUTE format('SELECT slot_count FROM %s.%I', '${schema}', p_ring || '_ring_state') INTO n;
    RETURN n;
END
$$;

-- Current cursor of a ring from its append-only ledger.
CREATE OR REPLACE FUNCTION ${schema}.ring_cursor(p_ring text, OUT slot int, OUT generation bigint)
LANGUAGE plpgsql STABLE AS $$
BEGIN
    EXECUTE format('SELECT slot, generation FROM %s.%I ORDER BY generation DESC LIMIT 1',
                   '${schema}', p_ring || '_ring_rotations') INTO slot, generation;
END
$$;

-- The ring's sealed slots, oldest first: every slot a rotation has initialized except the current one, walking back
-- from the cursor (docs/design/rings-and-proofs.md). The one definition of that arithmetic; Maintenance.status()
-- reports it as it is.
CREATE OR REPLACE FUNCTION ${schema}.ring_sealed_slots(p_ring text) RETURNS int[]
LANGUAGE sql STABLE AS $$
    SELECT coalesce(array_agg(((c.slot - k) % s.n + s.n) % s.n ORDER BY k DESC), '{}')
      FROM ${schema}.ring_cursor(p_ring) c
     CROSS JOIN (SELECT ${schema}.ring_slot_count(p_ring) AS n) s
     CROSS JOIN LATERAL generate_series(1, least(c.generation + 1, s.n)::int - 1) k
$$;

-- True when any child of the ring's slot holds a visible row (generation-agnostic: docs/design/rings-and-proofs.md).
-- Prune's proof for the lease ring, whose ended leases are deleted: a lease slot has no live row long before it has
-- no pages.
CREATE OR REPLACE FUNCTION ${schema}.ring_slot_busy(p_ring text, p_slot int) RETURNS boolean
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    f text;
    b boolean;
BEGIN
    FOREACH f IN ARRAY ${schema}.ring_families(p_ring) LOOP
        EXECUTE format('SELECT EXISTS (SELECT 1 FROM %s.%I)', '${schema}', f || '_' || p_slot) INTO b;
        IF b THEN
            RETURN true;
        END IF;
    END LOOP;
    RETURN false;
END
$$;

-- True when any child of the ring's slot occupies a page: a physical test that also sees rows no snapshot can see
-- yet (a producer transaction still open since the ring was at this slot) and dead rows of aborted writers. Rotation
-- never re-enters, and prune never waves through as 'noop', a slot for which this is true; only the TRUNCATE of prune,
-- after it proved every row of every generation in the slot inert under ACCESS EXCLUSIVE, makes it false again
-- (docs/adr/0005). This is rotation's gate for every ring; for the lease ring, whose ended leases are deleted but
-- leave their pages, it means prune truncates a lease slot before the ring re-enters it.
CREATE OR REPLACE FUNCTION ${schema}.ring_slot_occupied(p_ring text, p_slot int) RETURNS boolean
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    f text;
BEGIN
    FOREACH f IN ARRAY ${schema}.ring_families(p_ring) LOOP
        IF pg_relation_size(format('%s.%I', '${schema}', f || '_' || p_slot)::regclass) > 0 THEN
            RETURN true;
        END IF;
    END LOOP;
    RETURN false;
END
$$;

-- Estimated rows in one slot of a ring: the live-tuple counts the statistics system keeps for each child, summed over
-- the ring's families. Never a count(*): the counts are reset by TRUNCATE, grow when a writing transaction ends and
-- reach this function within about a second (the statistics flush interval of the writers). With track_counts off
-- they stay 0, and only age moves the ring on.
CREATE OR REPLACE FUNCTION ${schema}.ring_slot_rows(p_ring text, p_slot int) RETURNS bigint
LANGUAGE sql STABLE AS $$
    SELECT coalesce(sum(pg_stat_get_live_tuples(format('%s.%I', '${schema}', f || '_' || p_slot)::regclass)), 0)::bigint
      FROM unnest(${schema}.ring_families(p_ring)) f
$$;

-- Whether the ring's current slot is due to be left (docs/design/rings-and-proofs.md#cadence), and why: never while it
-- has been current for less than p_min_secs; after that when it has been current for p_max_age_secs, or holds more
-- than p_max_rows rows (ring_slot_rows). Returns 'age', 'size' or NULL (not due). Age is measured on the database
-- clock from the rotated_at of the ledger row that made the slot current. The one definition of the cadence: the
-- maintenance loop's rotate_ring applies it, and nothing in Java decides it.
CREATE OR REPLACE FUNCTION ${schema}.ring_rotation_due(p_ring text, p_min_secs double precision,
                                                       p_max_age_secs double precision, p_max_rows bigint)
RETURNS text
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    v_slot int;
    v_age  double precision;
BEGIN
    EXECUTE format('SELECT slot, extract(epoch FROM clock_timestamp() - rotated_at) FROM %s.%I ORDER BY generation DESC LIMIT 1',
                   '${schema}', p_ring || '_ring_rotations') INTO v_slot, v_age;
    IF v_age < p_min_secs THEN
        RETURN NULL;
    END IF;
    IF v_age >= p_max_age_secs THEN
        RETURN 'age';
    END IF;
    IF ${schema}.ring_slot_rows(p_ring, v_slot) > p_max_rows THEN
        RETURN 'size';
    END IF;
    RETURN NULL;
END
$$;

-- Rotation (docs/design/rings-and-proofs.md): 'rotated' | 'skipped_not_due' | 'skipped_busy' | 'skipped_idle'.
-- Rotation is permission, not obligation. With p_max_age_secs given (the maintenance loop), the cadence gate of
-- ring_rotation_due comes first, under the ring lock, so overlapping leaders cannot rotate faster than p_min_secs
-- either; without it (an operator's or a test's rotateNow) the ring rotates whenever the gates below allow.
-- The next slot must be physically empty, for every ring: only prune's TRUNCATE makes an occupied slot free again,
-- so the loop prunes the slot rotation needs right before it rotates into it (and not a rotation earlier).
CREATE OR REPLACE FUNCTION ${schema}.rotate_ring(p_ring text, p_min_secs double precision DEFAULT NULL,
                                                 p_max_age_secs double precision DEFAULT NULL,
                                                 p_max_rows bigint DEFAULT NULL)
RETURNS text
LANGUAGE plpgsql VOLATILE SET plan_cache_mode = force_custom_plan AS $$
DECLARE
    c      record;
    n      int := ${schema}.ring_slot_count(p_ring);
    v_next int;
    v_any  boolean := false;
    f      text;
    b      boolean;
    v_rows int;
BEGIN
    IF NOT pg_try_advisory_xact_lock(hashtextextended('${schema_name}.ring:' || p_ring, 0)) THEN
        RETURN 'skipped_busy';
    END IF;
    IF p_max_age_secs IS NOT NULL
       AND ${schema}.ring_rotation_due(p_ring, coalesce(p_min_secs, 0), p_max_age_secs,
                                       coalesce(p_max_rows, 9223372036854775807)) IS NULL THEN
        RETURN 'skipped_not_due';
    END IF;
    SELECT * INTO c FROM ${schema}.ring_cursor(p_ring);
    v_next := (c.slot + 1) % n;
    IF ${schema}.ring_slot_occupied(p_ring, v_next) THEN
        RETURN 'skipped_busy';
    END IF;
    -- Idle gate over the whole ring: a drained ring with sealed rows still rotates until they are pruned.
    FOREACH f IN ARRAY ${schema}.ring_families(p_ring) LOOP
        EXECUTE format('SELECT EXISTS (SELECT 1 FROM %s.%I)', '${schema}', f) INTO b;
        v_any := v_any OR b;
        EXIT WHEN v_any;
    END LOOP;
    IF NOT v_any THEN
        RETURN 'skipped_idle';
    END IF;
    EXECUTE format('INSERT INTO %s.%I (generation, slot) VALUES ($1, $2) ON CONFLICT (generation) DO NOTHING',
                   '${schema}', p_ring || '_ring_rotations')
       USING c.generation + 1, v_next;
    GET DIAGNOSTICS v_rows = ROW_COUNT;
    RETURN CASE WHEN v_rows = 1 THEN 'rotated' ELSE 'skipped_busy' END;
END
$$;

-- Proof that every claim in claim slot p_slot has exactly its closure evidence (docs/design/rings-and-proofs.md). Counts compare
-- for equality: a double closure is as fatal as a missing one.
CREATE OR REPLACE FUNCTION ${schema}.claim_slot_balanced(p_slot int) RETURNS boolean
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    v_claims bigint;
    v_closed bigint;
BEGIN
    EXECUTE format('SELECT (SELECT count(*) FROM %1$s.%2$I) + (SELECT coalesce(sum(claimed_count), 0) FROM %1$s.%3$I)',
                   '${schema}', 'lease_claims_' || p_slot, 'lease_claim_batches_' || p_slot) INTO v_claims;
    EXECUTE format('SELECT (SELECT count(*) FROM %1$s.%2$I) + (SELECT coalesce(sum(closed_count), 0) FROM %1$s.%3$I)',
                   '${schema}', 'lease_claim_closures_' || p_slot, 'lease_claim_closure_batches_' || p_slot) INTO v_closed;
    RETURN v_claims = v_closed;
END
$$;

-- The ready rows of queue slot p_slot that are still claimable, at most p_limit of them: at or past their lane's claim
-- cursor, not tombstoned, not covered by claim evidence (matched by queue, priority AND shard). Every generation the
-- slot holds (docs/adr/0005). The one definition of "pending ready": queue_slot_blocker asks it for one row, the proof
-- doctor (R__86_doctor.sql) for the first few, to name them.
-- Per lane: read the cursor once, then probe the lane's rows at or past it through the primary key. This runs again
-- while prune holds ACCESS EXCLUSIVE on the slot, so it must stay an index probe per lane, not a scan. The probe is a
-- LATERAL subquery with a LIMIT, which the planner cannot flatten into a join: it runs once per lane with the cursor
-- as an index bound, and the outer LIMIT stops at the first p_limit rows. Written as a semi-join, the planner hashed
-- every row of the slot against every claim-evidence row of its lane before applying the cursor (1.8 s for a
-- 15,000-row slot, quadratic in the slot's size); as a probe an inert slot costs one empty index range per lane.
CREATE OR REPLACE FUNCTION ${schema}.queue_slot_pending_ready(p_slot int, p_limit int)
RETURNS TABLE (job_id bigint, run_lease bigint, queue text, priority smallint, enqueue_shard smallint, lane_seq bigint)
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    RETURN QUERY EXECUTE format($q$
        SELECT p.job_id, p.run_lease, l.queue, l.priority, l.enqueue_shard, p.lane_seq
          FROM (SELECT h.queue, h.priority, h.enqueue_shard, %1$s.seq_next(h.seq_name) AS cur
                  FROM %1$s.queue_claim_heads h) l
         CROSS JOIN LATERAL (
               SELECT r.job_id, r.run_lease, r.lane_seq FROM %1$s.%2$I r
                WHERE r.ready_slot = $1 AND r.queue = l.queue AND r.priority = l.priority
                  AND r.enqueue_shard = l.enqueue_shard AND r.lane_seq >= l.cur
                  AND NOT EXISTS (SELECT 1 FROM %1$s.%3$I t
                                   WHERE t.ready_slot = r.ready_slot
                                     AND t.ready_generation = r.ready_generation AND t.queue = r.queue
                                     AND t.priority = r.priority AND t.enqueue_shard = r.enqueue_shard
                                     AND t.lane_seq = r.lane_seq)
                  AND NOT EXISTS (SELECT 1 FROM %1$s.%4$I e
                                   WHERE e.ready_generation = r.ready_generation AND e.queue = r.queue
                                     AND e.priority = r.priority AND e.enqueue_shard = r.enqueue_shard
                                     AND e.first_lane_seq <= r.lane_seq AND e.next_lane_seq > r.lane_seq
                                     AND e.lane_ranges @> r.lane_seq)
                ORDER BY r.lane_seq
                LIMIT $2) p
         LIMIT $2
        $q$, '${schema}', 'ready_entries_' || p_slot, 'ready_tombstones_' || p_slot,
             'ready_claim_attempt_batches_' || p_slot)
       USING p_slot, p_limit;
END
$$;

-- Proof that queue slot p_slot is inert (docs/design/rings-and-proofs.md): no lease references it, no ready row of any
-- lane is still claimable (queue_slot_pending_ready), and every receipt that references it has closure evidence.
-- Returns the reason it is not inert, or NULL.
-- The proof covers EVERY generation the slot holds, not only the one the ring last wrote there: TRUNCATE clears them
-- all, and a producer transaction that stayed open across a lap commits its row under the older generation
-- (docs/adr/0005). Lane positions and receipts do not depend on the generation, so nothing below filters on it.
CREATE OR REPLACE FUNCTION ${schema}.queue_slot_blocker(p_slot int) RETURNS text
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    v_claims bigint;
    v_closed bigint;
BEGIN
    IF EXISTS (SELECT 1 FROM ${schema}.leases l WHERE l.ready_slot = p_slot) THEN
        RETURN 'active_leases';
    END IF;
    IF EXISTS (SELECT 1 FROM ${schema}.queue_slot_pending_ready(p_slot, 1)) THEN
        RETURN 'pending_ready';
    END IF;
    SELECT (SELECT count(*) FROM ${schema}.lease_claims c WHERE c.ready_slot = p_slot)
         + (SELECT coalesce(sum(claimed_count), 0) FROM ${schema}.lease_claim_batches c
             WHERE c.ready_slot = p_slot)
      INTO v_claims;
    SELECT (SELECT count(*) FROM ${schema}.lease_claim_closures x
              JOIN ${schema}.lease_claims c ON c.claim_slot = x.claim_slot AND c.job_id = x.job_id AND c.run_lease = x.run_lease
             WHERE c.ready_slot = p_slot)
         + (SELECT coalesce(sum(closed_count), 0) FROM ${schema}.lease_claim_closure_batches c
             WHERE c.ready_slot = p_slot)
      INTO v_closed;
    IF v_claims <> v_closed THEN
        RETURN 'unclosed_claims';
    END IF;
    RETURN NULL;
END
$$;

-- Lock every child of the ring's slot in ACCESS EXCLUSIVE under a transaction-local lock_timeout. Returns false
-- when the lock could not be had in time (a reader holds one): prune then gives up quietly and backs off.
CREATE OR REPLACE FUNCTION ${schema}.lock_ring_slot(p_ring text, p_slot int, p_lock_timeout text) RETURNS boolean
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    v_tables text;
BEGIN
    SELECT string_agg(format('%s.%I', '${schema}', f || '_' || p_slot), ', ')
      INTO v_tables FROM unnest(${schema}.ring_families(p_ring)) f;
    PERFORM set_config('lock_timeout', p_lock_timeout, true);
    BEGIN
        EXECUTE 'LOCK TABLE ' || v_tables || ' IN ACCESS EXCLUSIVE MODE';
    EXCEPTION WHEN lock_not_available THEN
        PERFORM set_config('lock_timeout', '0', true);
        RETURN false;
    END;
    PERFORM set_config('lock_timeout', '0', true);
    RETURN true;
END
$$;

-- The history retention floor (docs/design/rings-and-proofs.md#history-retention): true while queue slot p_slot holds
-- terminal history finalized less than p_history_secs ago that prune would not carry forward (failed rows inside the
-- failed-retention floor are carried into the current slot, so they do not hold the slot). A policy, not a proof: it
-- is read once, before the exclusive lock, after the proofs have found the slot inert, and an inert slot gains no
-- terminal rows (every terminal row of a ready slot is written together with the closure, or the tombstone, of work
-- that the proofs would have seen open). A scan of the slot's completion batches and narrow rows, stopping at the first
-- young row.
CREATE OR REPLACE FUNCTION ${schema}.queue_slot_retained(p_slot int, p_history_secs int, p_failed_retention_secs int)
RETURNS boolean
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    b boolean;
BEGIN
    EXECUTE format($q$
        SELECT EXISTS (SELECT 1 FROM %1$s.%2$I x WHERE x.finalized_at > $1)
            OR EXISTS (SELECT 1 FROM %1$s.%3$I d
                        WHERE d.finalized_at > $1 AND NOT (d.state = 'failed' AND d.finalized_at > $2))
        $q$, '${schema}', 'receipt_completion_batches_' || p_slot, 'done_entries_' || p_slot)
       INTO b
       USING clock_timestamp() - make_interval(secs => p_history_secs),
             clock_timestamp() - make_interval(secs => p_failed_retention_secs);
    RETURN b;
END
$$;

-- Prune the next slot of a ring: the slot rotation needs next, which on a wrapped ring is the oldest sealed one
-- (docs/design/rings-and-proofs.md). Shape: ring advisory lock -> ring state and slot rows FOR UPDATE -> proofs ->
-- (queue ring) history retention floor -> bounded ACCESS EXCLUSIVE -> not-current re-check and proofs again (new
-- statements see what committed while we waited) -> TRUNCATE.
-- Returns 'pruned' | 'noop' | 'blocked' | 'skipped_<reason>' (open_claims, pending_ready, unclosed_claims,
-- active_leases, lease_active, retention, current). p_history_retention_secs 0 means no floor.
CREATE OR REPLACE FUNCTION ${schema}.prune_ring(p_ring text, p_lock_timeout text, p_failed_retention_secs int,
                                                p_history_retention_secs int DEFAULT 0)
RETURNS text
LANGUAGE plpgsql VOLATILE SET plan_cache_mode = force_custom_plan AS $$
DECLARE
    c        record;
    n        int := ${schema}.ring_slot_count(p_ring);
    v_slot   int;
    v_reason text;
    v_tables text;
    v_cur    record;
    v_slots_table text := p_ring || '_ring_slots';
BEGIN
    IF NOT pg_try_advisory_xact_lock(hashtextextended('${schema_name}.ring:' || p_ring, 0)) THEN
        RETURN 'blocked';
    END IF;
    SELECT * INTO c FROM ${schema}.ring_cursor(p_ring);
    v_slot := (c.slot + 1) % n;
    IF p_ring = 'lease' THEN
        -- Ended leases are deleted, so a lease slot holds no live row long before it holds no dead one: the proof
        -- is "no live lease", and there is work only while the child still occupies pages.
        IF ${schema}.ring_slot_busy(p_ring, v_slot) THEN
            RETURN 'skipped_lease_active';
        END IF;
        IF pg_relation_size(format('%s.%I', '${schema}', 'leases_' || v_slot)::regclass) = 0 THEN
            RETURN 'noop';
        END IF;
    ELSIF NOT ${schema}.ring_slot_occupied(p_ring, v_slot) THEN
        RETURN 'noop';
    END IF;
    EXECUTE format('SELECT 1 FROM %s.%I FOR UPDATE', '${schema}', p_ring || '_ring_state');
    EXECUTE format('SELECT 1 FROM %s.%I WHERE slot = $1 FOR UPDATE', '${schema}', v_slots_table) USING v_slot;

    v_reason := CASE p_ring
        WHEN 'claim' THEN CASE WHEN ${schema}.claim_slot_balanced(v_slot) THEN NULL ELSE 'open_claims' END
        WHEN 'queue' THEN ${schema}.queue_slot_blocker(v_slot)
        WHEN 'lease' THEN NULL
    END;
    IF v_reason IS NOT NULL THEN
        RETURN 'skipped_' || v_reason;
    END IF;
    -- The slot is inert; completed history younger than the floor keeps it all the same. Correctness comes first
    -- (the proofs above), then the floor, then the ring's room: while the floor holds the slot, rotation waits in
    -- front of it and the current slot grows past the size bound (docs/design/rings-and-proofs.md#history-retention).
    IF p_ring = 'queue' AND p_history_retention_secs > 0
       AND ${schema}.queue_slot_retained(v_slot, p_history_retention_secs, p_failed_retention_secs) THEN
        RETURN 'skipped_retention';
    END IF;

    IF NOT ${schema}.lock_ring_slot(p_ring, v_slot, p_lock_timeout) THEN
        RETURN 'blocked';
    END IF;

    SELECT * INTO v_cur FROM ${schema}.ring_cursor(p_ring);
    IF v_cur.slot = v_slot THEN
        RETURN 'skipped_current';
    END IF;
    v_reason := CASE p_ring
        WHEN 'claim' THEN CASE WHEN ${schema}.claim_slot_balanced(v_slot) THEN NULL ELSE 'open_claims' END
        WHEN 'queue' THEN ${schema}.queue_slot_blocker(v_slot)
        WHEN 'lease' THEN CASE WHEN ${schema}.ring_slot_busy('lease', v_slot) THEN 'lease_active' END
    END;
    IF v_reason IS NOT NULL THEN
        RETURN 'skipped_' || v_reason;
    END IF;

    IF p_ring = 'queue' THEN
        -- Failed history inside the retention floor outlives its segment: carry it forward, wide, into the
        -- current slot (docs/design/rings-and-proofs.md). A key collision would mean corruption, so no ON CONFLICT.
        EXECUTE format($q$
            INSERT INTO %1$s.done_entries (ready_slot, ready_generation, job_id, kind, queue, state, priority, attempt,
                                           run_lease, lane_seq, enqueue_shard, attempted_at, finalized_at, args,
                                           max_attempts, run_at, created_at, payload)
            SELECT $1, $2, d.job_id, d.kind, d.queue, d.state, d.priority, d.attempt, d.run_lease, -d.job_id, 0,
                   d.attempted_at, d.finalized_at, coalesce(d.args, r.args), coalesce(d.max_attempts, r.max_attempts),
                   coalesce(d.run_at, r.run_at), coalesce(d.created_at, r.created_at), coalesce(d.payload, r.payload)
              FROM %1$s.%2$I d
              LEFT JOIN %1$s.%3$I r
                ON r.ready_slot = d.ready_slot AND r.ready_generation = d.ready_generation AND r.queue = d.queue
               AND r.priority = d.priority AND r.enqueue_shard = d.enqueue_shard AND r.lane_seq = d.lane_seq
             WHERE d.state = 'failed' AND d.finalized_at > clock_timestamp() - make_interval(secs => $3)
            $q$, '${schema}', 'done_entries_' || v_slot, 'ready_entries_' || v_slot)
           USING v_cur.slot, v_cur.generation, p_failed_retention_secs;
        -- Counts survive the truncate as append-only rollup deltas (never an upsert: docs/design/rings-and-proofs.md).
        EXECUTE format($q$
            INSERT INTO %1$s.queue_terminal_rollup_deltas (queue, priority, pruned_completed_delta, pruned_failed_delta)
            SELECT queue, priority, sum(completed), sum(failed) FROM (
                SELECT queue, priority, sum(completed_count) AS completed, 0 AS failed FROM %1$s.%2$I GROUP BY 1, 2
                UNION ALL
                SELECT queue, priority, count(*) FILTER (WHERE state = 'completed'),
                       count(*) FILTER (WHERE state = 'failed' AND finalized_at <= clock_timestamp() - make_interval(secs => $1))
                  FROM %1$s.%3$I GROUP BY 1, 2) x
             GROUP BY queue, priority
            HAVING sum(completed) + sum(failed) > 0
            $q$, '${schema}', 'receipt_completion_batches_' || v_slot, 'done_entries_' || v_slot)
           USING p_failed_retention_secs;
        DELETE FROM ${schema}.queue_terminal_live_counts WHERE ready_slot = v_slot;
    ELSIF p_ring = 'claim' THEN
        UPDATE ${schema}.claim_ring_slots
           SET rescue_cursor_claimed_at = '-infinity', rescue_cursor_job_id = 0, rescue_cursor_run_lease = 0,
               deadline_cursor_deadline_at = '-infinity', deadline_cursor_job_id = 0, deadline_cursor_run_lease = 0,
               batch_deadline_cursor_deadline_at = '-infinity', batch_deadline_cursor_batch_id = 0
         WHERE slot = v_slot;
    END IF;

    SELECT string_agg(format('%s.%I', '${schema}', f || '_' || v_slot), ', ')
      INTO v_tables FROM unnest(${schema}.ring_families(p_ring)) f;
    EXECUTE 'TRUNCATE ' || v_tables;
    RETURN 'pruned';
END
$$;
