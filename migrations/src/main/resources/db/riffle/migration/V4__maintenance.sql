-- Maintenance (DESIGN.md §6): ring rotation and prune, stale and deadline rescue, heartbeat evidence and the
-- destructive-upgrade guard. Every function is safe when two leaders overlap: rotation and prune serialize on a
-- per-ring advisory lock, rescue on the slot's cursor row and on per-attempt try-locks.
-- Lock order everywhere: ring advisory lock -> ring slot row -> child ACCESS EXCLUSIVE (DESIGN.md §7).

-- The families (partitioned tables) of each ring.
CREATE FUNCTION ${schema}.ring_families(p_ring text) RETURNS text[]
LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE p_ring
        WHEN 'queue' THEN ARRAY['ready_entries', 'ready_segments', 'ready_tombstones', 'ready_claim_attempt_batches',
                                'done_entries', 'receipt_completion_batches', 'receipt_completion_tombstones',
                                'queue_terminal_count_deltas']
        WHEN 'claim' THEN ARRAY['lease_claims', 'lease_claim_batches', 'lease_claim_closures', 'lease_claim_closure_batches']
        WHEN 'lease' THEN ARRAY['leases']
    END
$$;

CREATE FUNCTION ${schema}.ring_slot_count(p_ring text) RETURNS int
LANGUAGE plpgsql STABLE AS $$
DECLARE
    n int;
BEGIN
    EXECUTE format('SELECT slot_count FROM %s.%I', '${schema}', p_ring || '_ring_state') INTO n;
    RETURN n;
END
$$;

-- Current cursor of a ring from its append-only ledger.
CREATE FUNCTION ${schema}.ring_cursor(p_ring text, OUT slot int, OUT generation bigint)
LANGUAGE plpgsql STABLE AS $$
BEGIN
    EXECUTE format('SELECT slot, generation FROM %s.%I ORDER BY generation DESC LIMIT 1',
                   '${schema}', p_ring || '_ring_rotations') INTO slot, generation;
END
$$;

-- True when any child of the ring's slot holds a row (physical, generation-agnostic: DESIGN.md §3.3).
CREATE FUNCTION ${schema}.ring_slot_busy(p_ring text, p_slot int) RETURNS boolean
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
-- (docs/adr/0005). The lease ring keeps the row test: ended leases are deleted, so its pages outlive its rows.
CREATE FUNCTION ${schema}.ring_slot_occupied(p_ring text, p_slot int) RETURNS boolean
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

-- Rotation (DESIGN.md §6.7): 'rotated' | 'skipped_busy' | 'skipped_idle'. Rotation is permission, not obligation.
CREATE FUNCTION ${schema}.rotate_ring(p_ring text) RETURNS text
LANGUAGE plpgsql VOLATILE AS $$
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
    SELECT * INTO c FROM ${schema}.ring_cursor(p_ring);
    v_next := (c.slot + 1) % n;
    IF p_ring = 'lease' THEN
        b := ${schema}.ring_slot_busy(p_ring, v_next);
    ELSE
        b := ${schema}.ring_slot_occupied(p_ring, v_next);
    END IF;
    IF b THEN
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

-- Proof that every claim in claim slot p_slot has exactly its closure evidence (DESIGN.md §6.11). Counts compare
-- for equality: a double closure is as fatal as a missing one.
CREATE FUNCTION ${schema}.claim_slot_balanced(p_slot int) RETURNS boolean
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

-- Proof that queue slot p_slot is inert (DESIGN.md §6.9): no lease references it, no ready row of any lane is still
-- claimable (at or past the lane's cursor, not tombstoned, not covered by claim evidence; matched by queue, priority
-- AND shard), and every receipt that references it has closure evidence. Returns the reason it is not inert, or NULL.
-- The proof covers EVERY generation the slot holds, not only the one the ring last wrote there: TRUNCATE clears them
-- all, and a producer transaction that stayed open across a lap commits its row under the older generation
-- (docs/adr/0005). Lane positions and receipts do not depend on the generation, so nothing below filters on it.
CREATE FUNCTION ${schema}.queue_slot_blocker(p_slot int) RETURNS text
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    b        boolean;
    v_claims bigint;
    v_closed bigint;
BEGIN
    IF EXISTS (SELECT 1 FROM ${schema}.leases l WHERE l.ready_slot = p_slot) THEN
        RETURN 'active_leases';
    END IF;
    -- Per lane: read the cursor once, then probe the lane's rows at or past it through the primary key. This runs
    -- again while prune holds ACCESS EXCLUSIVE on the slot, so it must stay an index probe per lane, not a scan.
    EXECUTE format($q$
        SELECT EXISTS (
            SELECT 1
              FROM %1$s.queue_claim_heads h
             CROSS JOIN LATERAL (SELECT %1$s.seq_next(h.seq_name) AS cur) c
             WHERE EXISTS (
                   SELECT 1 FROM %1$s.%2$I r
                    WHERE r.queue = h.queue AND r.priority = h.priority AND r.enqueue_shard = h.enqueue_shard
                      AND r.lane_seq >= c.cur
                      AND NOT EXISTS (SELECT 1 FROM %1$s.%3$I t
                                       WHERE t.ready_generation = r.ready_generation AND t.queue = r.queue
                                         AND t.priority = r.priority AND t.enqueue_shard = r.enqueue_shard
                                         AND t.lane_seq = r.lane_seq)
                      AND NOT EXISTS (SELECT 1 FROM %1$s.%4$I e
                                       WHERE e.ready_generation = r.ready_generation AND e.queue = r.queue
                                         AND e.priority = r.priority AND e.enqueue_shard = r.enqueue_shard
                                         AND e.first_lane_seq <= r.lane_seq AND e.next_lane_seq > r.lane_seq
                                         AND e.lane_ranges @> r.lane_seq)))
        $q$, '${schema}', 'ready_entries_' || p_slot, 'ready_tombstones_' || p_slot,
             'ready_claim_attempt_batches_' || p_slot)
       INTO b;
    IF b THEN
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
CREATE FUNCTION ${schema}.lock_ring_slot(p_ring text, p_slot int, p_lock_timeout text) RETURNS boolean
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

-- Prune the next slot of a ring: the slot rotation needs next, which on a wrapped ring is the oldest sealed one
-- (DESIGN.md §6.8-§6.11). Shape: ring advisory lock -> ring state and slot rows FOR UPDATE -> proofs -> bounded ACCESS EXCLUSIVE
-- -> not-current re-check and proofs again (new statements see what committed while we waited) -> TRUNCATE.
-- Returns 'pruned' | 'noop' | 'blocked' | 'skipped_<reason>' (open_claims, pending_ready, unclosed_claims,
-- active_leases, lease_active, current).
CREATE FUNCTION ${schema}.prune_ring(p_ring text, p_lock_timeout text, p_failed_retention_secs int)
RETURNS text
LANGUAGE plpgsql VOLATILE AS $$
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
        -- current slot (DESIGN.md §6.9, ADR-032). A key collision would mean corruption, so no ON CONFLICT.
        EXECUTE format($q$
            INSERT INTO %1$s.done_entries (ready_slot, ready_generation, job_id, kind, queue, state, priority, attempt,
                                           run_lease, lane_seq, enqueue_shard, attempted_at, finalized_at, args,
                                           max_attempts, run_at, created_at, payload)
            SELECT $1, $2, d.job_id, d.kind, d.queue, d.state, d.priority, d.attempt, d.run_lease, -d.job_id, 0,
                   d.attempted_at, d.finalized_at, coalesce(d.args, r.args), coalesce(d.max_attempts, r.max_attempts),
                   coalesce(d.run_at, r.run_at), coalesce(d.created_at, r.created_at), coalesce(d.payload, r.payload)
              FROM %1$s.%2$I d
              LEFT JOIN %1$s.%3$I r
                ON r.ready_generation = d.ready_generation AND r.queue = d.queue AND r.priority = d.priority
               AND r.enqueue_shard = d.enqueue_shard AND r.lane_seq = d.lane_seq
             WHERE d.state = 'failed' AND d.finalized_at > clock_timestamp() - make_interval(secs => $3)
            $q$, '${schema}', 'done_entries_' || v_slot, 'ready_entries_' || v_slot)
           USING v_cur.slot, v_cur.generation, p_failed_retention_secs;
        -- Counts survive the truncate as append-only rollup deltas (never an upsert: DESIGN.md §6.9).
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

-- Heartbeat evidence for long attempts (DESIGN.md §5.6): per-attempt locks first, then in a new statement upsert
-- attempt_state only for attempts whose receipt (compact item, or row-local claim not yet fenced) is still open. One statement for all of a process's
-- long-running attempts, carrying buffered progress where there is some (NULL keeps the stored progress); short
-- jobs never get a row. Returns the attempts that were recorded.
CREATE FUNCTION ${schema}.heartbeat(p_claim_slots int[], p_job_ids bigint[], p_run_leases bigint[],
                                    p_receipt_ids bigint[], p_progress jsonb[])
RETURNS TABLE (job_id bigint, run_lease bigint)
LANGUAGE plpgsql VOLATILE AS $$
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
                    OR EXISTS (SELECT 1 FROM %1$s.%4$I r WHERE r.job_id = x.jid AND r.run_lease = x.rl
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

-- Stale rescue (DESIGN.md §6.4.1), receipt side, one pass over the claim slots, oldest first. The window holds
-- compact items and row-local claims alike; a claim whose attempt has a lease belongs to the lease side
-- (rescue_leases) and is passed over here. Per slot: take the cursor row
-- (an overlapping leader's pass then runs after this one, with fresh snapshots), read a window of claims older than the cutoff after the
-- cursor (wrapping), find the open ones without fresh heartbeat evidence, try-lock them (a completion in flight
-- wins: skip, do not wait), close them through close_compact in a NEW statement (fresh snapshot after the locks),
-- and advance the cursor over the longest prefix that is closed, alive, or closed now; the first stale claim that
-- could not be closed stops it. Rescued attempts are routed to retry (or failure/DLQ when exhausted) and their
-- workers are told through the cancel channel. Cutoffs use the database clock.
CREATE FUNCTION ${schema}.rescue_stale(p_stale_secs double precision, p_budget int, p_window int, p_dlq boolean)
RETURNS TABLE (job_id bigint, run_lease bigint, disposition text)
LANGUAGE plpgsql VOLATILE AS $$
#variable_conflict use_column
DECLARE
    c        record;
    n        int := ${schema}.ring_slot_count('claim');
    k        int;
    v_slot   int;
    v_cutoff timestamptz := clock_timestamp() - make_interval(secs => p_stale_secs);
    v_budget int := p_budget;
    cur      record;
    w        record;
    v_locked record;
    v_closed bigint[];
    r        record;
    v_adv    record;
    v_bids   bigint[];
    v_idxs   int[];
    v_jids   bigint[];
    v_rls    bigint[];
    v_rids   bigint[];
    v_cnt    int;
BEGIN
    SELECT * INTO c FROM ${schema}.ring_cursor('claim');
    FOR k IN REVERSE least(c.generation + 1, n) - 1 .. 0 LOOP
        EXIT WHEN v_budget <= 0;
        v_slot := ((c.slot - k) % n + n) % n;
        -- Wait for the cursor row rather than skip it: its other holders (prune, an overlapping leader's rescue)
        -- hold it only briefly, and skipping would let a busy prune starve rescue of the slot prune waits for.
        SELECT * INTO cur FROM ${schema}.claim_ring_slots s WHERE s.slot = v_slot FOR UPDATE;

        -- The window, annotated: closed (any closure evidence), stale (no heartbeat newer than the cutoff).
        EXECUTE format($q$
            WITH items AS (
                SELECT b.claimed_at, i.jid, i.rl, i.rid, b.batch_id, i.idx::int AS idx
                  FROM %1$s.%2$I b
                 CROSS JOIN LATERAL unnest(b.job_ids, b.run_leases, b.receipt_ids) WITH ORDINALITY AS i(jid, rl, rid, idx)
                 WHERE b.claimed_at < $1
                UNION ALL
                SELECT c.claimed_at, c.job_id, c.run_lease, c.receipt_id, 0::bigint, 0
                  FROM %1$s.%4$I c
                 WHERE c.claimed_at < $1
            ),
            after AS (
                SELECT *, 0 AS lap FROM items
                 WHERE (claimed_at, jid, rl) > ($2, $3, $4)
                 ORDER BY claimed_at, jid, rl LIMIT $5
            ),
            wrapped AS (
                SELECT *, 1 AS lap FROM items
                 WHERE (claimed_at, jid, rl) <= ($2, $3, $4)
                 ORDER BY claimed_at, jid, rl LIMIT greatest($5 - (SELECT count(*) FROM after), 0)
            ),
            cand AS (
                SELECT x.*, row_number() OVER (ORDER BY x.lap, x.claimed_at, x.jid, x.rl) AS rn
                  FROM (SELECT * FROM after UNION ALL SELECT * FROM wrapped) x
            )
            SELECT coalesce(array_agg(cand.rn ORDER BY cand.rn), '{}') AS rns,
                   coalesce(array_agg(cand.claimed_at ORDER BY cand.rn), '{}') AS ats,
                   coalesce(array_agg(cand.jid ORDER BY cand.rn), '{}') AS jids,
                   coalesce(array_agg(cand.rl ORDER BY cand.rn), '{}') AS rls,
                   coalesce(array_agg(cand.rid ORDER BY cand.rn), '{}') AS rids,
                   coalesce(array_agg(cand.batch_id ORDER BY cand.rn), '{}') AS bids,
                   coalesce(array_agg(cand.idx ORDER BY cand.rn), '{}') AS idxs,
                   coalesce(array_agg(CASE WHEN cand.batch_id <> 0
                                           THEN EXISTS (SELECT 1 FROM %1$s.%3$I cl WHERE cl.receipt_ranges @> cand.rid)
                                           ELSE EXISTS (SELECT 1 FROM %1$s.%4$I c WHERE c.job_id = cand.jid
                                                           AND c.run_lease = cand.rl AND c.closed_at IS NOT NULL)
                                                OR EXISTS (SELECT 1 FROM %1$s.%5$I e WHERE e.job_id = cand.jid
                                                              AND e.run_lease = cand.rl) END
                                      ORDER BY cand.rn), '{}') AS closed,
                   coalesce(array_agg(EXISTS (SELECT 1 FROM %1$s.leases l WHERE l.job_id = cand.jid AND l.run_lease = cand.rl)
                                      ORDER BY cand.rn), '{}') AS leased,
                   coalesce(array_agg(coalesce((SELECT a.heartbeat_at FROM %1$s.attempt_state a
                                                 WHERE a.job_id = cand.jid AND a.run_lease = cand.rl), cand.claimed_at) < $1
                                      ORDER BY cand.rn), '{}') AS stale
              FROM cand
            $q$, '${schema}', 'lease_claim_batches_' || v_slot, 'lease_claim_closure_batches_' || v_slot,
                 'lease_claims_' || v_slot, 'lease_claim_closures_' || v_slot)
           INTO w
           USING v_cutoff, cur.rescue_cursor_claimed_at, cur.rescue_cursor_job_id, cur.rescue_cursor_run_lease, p_window;
        CONTINUE WHEN cardinality(w.rns) = 0;

        -- Try-lock the open stale candidates, up to the budget, in this statement...
        SELECT coalesce(array_agg(x.ord ORDER BY x.ord), '{}') AS ords INTO v_locked
          FROM (SELECT u.ord
                  FROM unnest(w.jids, w.rls, w.closed, w.stale, w.leased) WITH ORDINALITY AS u(jid, rl, closed, stale, leased, ord)
                 WHERE NOT u.closed AND u.stale AND NOT u.leased
                 ORDER BY u.ord
                 LIMIT v_budget) x
         WHERE pg_try_advisory_xact_lock(${schema}.attempt_lock_key(w.jids[x.ord], w.rls[x.ord]));

        -- ...re-judge "stale" under those locks with a fresh snapshot: a heartbeat that committed after the window
        -- read (it takes the same attempt lock, so none can commit from here on) keeps its attempt alive. A candidate
        -- dropped here counts as alive below, so the cursor stops before it and the next pass looks again...
        IF cardinality(v_locked.ords) > 0 THEN
            SELECT coalesce(array_agg(t.o ORDER BY t.o), '{}') AS ords INTO v_locked
              FROM unnest(v_locked.ords) AS t(o)
             WHERE coalesce((SELECT a.heartbeat_at FROM ${schema}.attempt_state a
                              WHERE a.job_id = w.jids[t.o] AND a.run_lease = w.rls[t.o]), w.ats[t.o]) < v_cutoff
               AND NOT EXISTS (SELECT 1 FROM ${schema}.leases l WHERE l.job_id = w.jids[t.o] AND l.run_lease = w.rls[t.o]);
        END IF;

        -- ...and close them in the next ones (close_attempts re-checks closure evidence with a fresh snapshot).
        v_closed := '{}';
        IF cardinality(v_locked.ords) > 0 THEN
            SELECT array_agg(w.bids[t.o] ORDER BY t.i), array_agg(w.idxs[t.o] ORDER BY t.i),
                   array_agg(w.jids[t.o] ORDER BY t.i), array_agg(w.rls[t.o] ORDER BY t.i),
                   array_agg(w.rids[t.o] ORDER BY t.i)
              INTO v_bids, v_idxs, v_jids, v_rls, v_rids
              FROM unnest(v_locked.ords) WITH ORDINALITY AS t(o, i);
            v_cnt := cardinality(v_jids);
            FOR r IN
                SELECT cc.job_id AS jid, cc.run_lease AS rl, cc.status AS st, cc.disposition AS disp, cc.ci
                  FROM ${schema}.close_attempts(array_fill(v_slot, ARRAY[v_cnt]), v_bids, v_idxs, v_jids, v_rls, v_rids,
                                                array_fill('rescue'::text, ARRAY[v_cnt]),
                                                array_fill(NULL::bigint, ARRAY[v_cnt]),
                                                array_fill('receipt claim stale: worker presumed dead'::text, ARRAY[v_cnt]),
                                                array_fill(p_dlq, ARRAY[v_cnt]), array_fill(false, ARRAY[v_cnt]))
                       WITH ORDINALITY AS cc(job_id, run_lease, status, disposition, ci)
            LOOP
                IF r.st = 'closed' THEN
                    v_closed := v_closed || v_rids[r.ci];
                    v_budget := v_budget - 1;
                    job_id := r.jid;
                    run_lease := r.rl;
                    disposition := r.disp;
                    RETURN NEXT;
                END IF;
            END LOOP;
        END IF;

        -- Advance over the longest prefix of advanceable candidates (closed before, alive, lease-managed, or
        -- closed now).
        SELECT u.ord INTO v_adv
          FROM unnest(w.closed, w.stale, w.rids, w.leased) WITH ORDINALITY AS u(closed, stale, rid, leased, ord)
         WHERE NOT (u.closed OR NOT u.stale OR u.leased OR u.rid = ANY (v_closed))
         ORDER BY u.ord LIMIT 1;
        IF v_adv.ord IS NULL THEN
            UPDATE ${schema}.claim_ring_slots s
               SET rescue_cursor_claimed_at = w.ats[cardinality(w.ats)], rescue_cursor_job_id = w.jids[cardinality(w.jids)],
                   rescue_cursor_run_lease = w.rls[cardinality(w.rls)]
             WHERE s.slot = v_slot;
        ELSIF v_adv.ord > 1 THEN
            UPDATE ${schema}.claim_ring_slots s
               SET rescue_cursor_claimed_at = w.ats[v_adv.ord - 1], rescue_cursor_job_id = w.jids[v_adv.ord - 1],
                   rescue_cursor_run_lease = w.rls[v_adv.ord - 1]
             WHERE s.slot = v_slot;
        END IF;
    END LOOP;
END
$$;

-- Deadline rescue (DESIGN.md §6.5), both receipt shapes: per claim slot, oldest first, sharing one budget.
--   Compact batches: a cursor over (deadline_at, batch_id) walks batches whose shared deadline has passed (database
--   clock), wrapping. Each expired batch is expanded; its due members are try-locked and closed with outcome
--   'deadline_expired' (routed to retry, or failure/DLQ when exhausted). The cursor passes a batch only when no due
--   member is left open; a partially rescued batch stops it, so it is revisited.
--   Row-local claims: a cursor over (deadline_at, job_id, run_lease) walks expired lease_claims rows the same way,
--   closing into explicit closures; the first due claim it cannot close stops it.
-- A member whose attempt has a lease is due only while the lease is running with an expired deadline: a lease
-- parked on a callback has its deadline suspended (NULL), and callback-timeout rescue owns it.
CREATE FUNCTION ${schema}.rescue_deadlines(p_budget int, p_window int, p_dlq boolean)
RETURNS TABLE (job_id bigint, run_lease bigint, disposition text)
LANGUAGE plpgsql VOLATILE AS $$
#variable_conflict use_column
DECLARE
    c         record;
    n         int := ${schema}.ring_slot_count('claim');
    k         int;
    v_slot    int;
    v_now     timestamptz := clock_timestamp();
    v_budget  int := p_budget;
    cur       record;
    b         record;
    m         record;
    r         record;
    v_due_sql text;
    v_open    int;
    v_stuck   boolean;
    v_adv_at  timestamptz;
    v_adv_id  bigint;
    v_adv_rl  bigint;
    v_jids    bigint[];
    v_rls     bigint[];
    v_rids    bigint[];
    v_idxs    int[];
    v_leased  boolean[];
    v_cnt     int;
    v_closed  int;
BEGIN
    SELECT * INTO c FROM ${schema}.ring_cursor('claim');
    FOR k IN REVERSE least(c.generation + 1, n) - 1 .. 0 LOOP
        EXIT WHEN v_budget <= 0;
        v_slot := ((c.slot - k) % n + n) % n;
        -- Wait for the cursor row rather than skip it: its other holders (prune, an overlapping leader's rescue)
        -- hold it only briefly, and skipping would let a busy prune starve rescue of the slot prune waits for.
        SELECT * INTO cur FROM ${schema}.claim_ring_slots s WHERE s.slot = v_slot FOR UPDATE;

        -- Due members of one batch: open (no closure evidence) and not suspended by a parked lease.
        v_due_sql := format($q$
            SELECT coalesce(array_agg(u.jid ORDER BY u.idx), '{}') AS jids, coalesce(array_agg(u.rl ORDER BY u.idx), '{}') AS rls,
                   coalesce(array_agg(u.rid ORDER BY u.idx), '{}') AS rids, coalesce(array_agg(u.idx::int ORDER BY u.idx), '{}') AS idxs,
                   coalesce(array_agg(l.state IS NOT NULL ORDER BY u.idx), '{}') AS leased, count(*) AS open_count
              FROM unnest($1::bigint[], $2::bigint[], $3::bigint[]) WITH ORDINALITY AS u(jid, rl, rid, idx)
              LEFT JOIN LATERAL (SELECT l.state, l.deadline_at FROM %1$s.leases l
                                  WHERE l.job_id = u.jid AND l.run_lease = u.rl LIMIT 1) l ON true
             WHERE NOT EXISTS (SELECT 1 FROM %1$s.%2$I cl WHERE cl.receipt_ranges @> u.rid)
               AND (l.state IS NULL OR (l.state = 'running' AND l.deadline_at < $4))
            $q$, '${schema}', 'lease_claim_closure_batches_' || v_slot);

        v_stuck := false;
        v_adv_at := NULL;
        FOR b IN EXECUTE format($q$
                SELECT * FROM (
                    (SELECT 0 AS lap, x.batch_id, x.deadline_at, x.job_ids, x.run_leases, x.receipt_ids
                       FROM %1$s.%2$I x
                      WHERE x.deadline_at IS NOT NULL AND x.deadline_at < $1 AND (x.deadline_at, x.batch_id) > ($2, $3)
                      ORDER BY x.deadline_at, x.batch_id LIMIT $4)
                    UNION ALL
                    (SELECT 1 AS lap, x.batch_id, x.deadline_at, x.job_ids, x.run_leases, x.receipt_ids
                       FROM %1$s.%2$I x
                      WHERE x.deadline_at IS NOT NULL AND x.deadline_at < $1 AND (x.deadline_at, x.batch_id) <= ($2, $3)
                      ORDER BY x.deadline_at, x.batch_id LIMIT $4)) w
                 ORDER BY lap, deadline_at, batch_id LIMIT $4
                $q$, '${schema}', 'lease_claim_batches_' || v_slot)
                USING v_now, cur.batch_deadline_cursor_deadline_at, cur.batch_deadline_cursor_batch_id, p_window
        LOOP
            EXECUTE v_due_sql INTO m USING b.job_ids, b.run_leases, b.receipt_ids, v_now;
            v_open := m.open_count;
            v_closed := 0;
            IF v_open > 0 AND v_budget > 0 THEN
                -- Try-lock (a completion in flight wins), then close in new statements (fresh snapshots).
                SELECT coalesce(array_agg(m.jids[t.i] ORDER BY t.i), '{}'), coalesce(array_agg(m.rls[t.i] ORDER BY t.i), '{}'),
                       coalesce(array_agg(m.rids[t.i] ORDER BY t.i), '{}'), coalesce(array_agg(m.idxs[t.i] ORDER BY t.i), '{}'),
                       coalesce(array_agg(m.leased[t.i] ORDER BY t.i), '{}')
                  INTO v_jids, v_rls, v_rids, v_idxs, v_leased
                  FROM (SELECT i FROM generate_series(1, least(v_open, v_budget)) i) t
                 WHERE pg_try_advisory_xact_lock(${schema}.attempt_lock_key(m.jids[t.i], m.rls[t.i]));
                v_cnt := cardinality(v_jids);
                IF v_cnt > 0 THEN
                    FOR r IN
                        SELECT cc.job_id AS jid, cc.run_lease AS rl, cc.status AS st, cc.disposition AS disp
                          FROM ${schema}.close_attempts(array_fill(v_slot, ARRAY[v_cnt]),
                                                        array_fill(b.batch_id, ARRAY[v_cnt]), v_idxs, v_jids, v_rls, v_rids,
                                                        array_fill('deadline'::text, ARRAY[v_cnt]),
                                                        array_fill(NULL::bigint, ARRAY[v_cnt]),
                                                        array_fill('hard deadline exceeded'::text, ARRAY[v_cnt]),
                                                        array_fill(p_dlq, ARRAY[v_cnt]), v_leased) cc
                    LOOP
                        IF r.st = 'closed' THEN
                            v_closed := v_closed + 1;
                            v_budget := v_budget - 1;
                            job_id := r.jid;
                            run_lease := r.rl;
                            disposition := r.disp;
                            RETURN NEXT;
                        END IF;
                    END LOOP;
                END IF;
            END IF;
            -- Members closed meanwhile by someone else count as closed too: re-check before deciding.
            IF v_closed < v_open THEN
                EXECUTE v_due_sql INTO m USING b.job_ids, b.run_leases, b.receipt_ids, v_now;
                v_open := m.open_count;
                v_closed := 0;
            END IF;
            v_stuck := v_open - v_closed > 0;
            EXIT WHEN v_stuck;
            v_adv_at := b.deadline_at;
            v_adv_id := b.batch_id;
        END LOOP;
        IF v_adv_at IS NOT NULL THEN
            UPDATE ${schema}.claim_ring_slots s
               SET batch_deadline_cursor_deadline_at = v_adv_at, batch_deadline_cursor_batch_id = v_adv_id
             WHERE s.slot = v_slot;
        END IF;

        -- Row-local claims: one claim at a time (they are only written for materialized queues).
        v_adv_at := NULL;
        FOR b IN EXECUTE format($q$
                SELECT w.*, (w.closed_at IS NOT NULL
                             OR EXISTS (SELECT 1 FROM %1$s.%3$I e WHERE e.job_id = w.job_id AND e.run_lease = w.run_lease)) AS closed,
                       l.state AS lease_state, l.deadline_at AS lease_deadline_at
                  FROM (
                    (SELECT 0 AS lap, x.deadline_at, x.job_id, x.run_lease, x.receipt_id, x.closed_at
                       FROM %1$s.%2$I x
                      WHERE x.deadline_at IS NOT NULL AND x.deadline_at < $1
                        AND (x.deadline_at, x.job_id, x.run_lease) > ($2, $3, $4)
                      ORDER BY x.deadline_at, x.job_id, x.run_lease LIMIT $5)
                    UNION ALL
                    (SELECT 1 AS lap, x.deadline_at, x.job_id, x.run_lease, x.receipt_id, x.closed_at
                       FROM %1$s.%2$I x
                      WHERE x.deadline_at IS NOT NULL AND x.deadline_at < $1
                        AND (x.deadline_at, x.job_id, x.run_lease) <= ($2, $3, $4)
                      ORDER BY x.deadline_at, x.job_id, x.run_lease LIMIT $5)) w
                  LEFT JOIN LATERAL (SELECT l.state, l.deadline_at FROM %1$s.leases l
                                      WHERE l.job_id = w.job_id AND l.run_lease = w.run_lease LIMIT 1) l ON true
                 ORDER BY w.lap, w.deadline_at, w.job_id, w.run_lease LIMIT $5
                $q$, '${schema}', 'lease_claims_' || v_slot, 'lease_claim_closures_' || v_slot)
                USING v_now, cur.deadline_cursor_deadline_at, cur.deadline_cursor_job_id, cur.deadline_cursor_run_lease,
                      p_window
        LOOP
            IF NOT b.closed AND (b.lease_state IS NULL OR (b.lease_state = 'running' AND b.lease_deadline_at < v_now)) THEN
                EXIT WHEN v_budget <= 0;
                EXIT WHEN NOT pg_try_advisory_xact_lock(${schema}.attempt_lock_key(b.job_id, b.run_lease));
                SELECT cc.status AS st, cc.disposition AS disp INTO r
                  FROM ${schema}.close_attempts(ARRAY[v_slot], ARRAY[0::bigint], ARRAY[0], ARRAY[b.job_id],
                                                ARRAY[b.run_lease], ARRAY[b.receipt_id], ARRAY['deadline'],
                                                ARRAY[NULL::bigint], ARRAY['hard deadline exceeded'], ARRAY[p_dlq],
                                                ARRAY[b.lease_state IS NOT NULL]) cc;
                IF r.st = 'closed' THEN
                    v_budget := v_budget - 1;
                    job_id := b.job_id;
                    run_lease := b.run_lease;
                    disposition := r.disp;
                    RETURN NEXT;
                ELSIF r.st <> 'already_closed' THEN
                    -- The lease changed under us (a callback parked it after our read): revisit it next tick.
                    EXIT;
                END IF;
            END IF;
            v_adv_at := b.deadline_at;
            v_adv_id := b.job_id;
            v_adv_rl := b.run_lease;
        END LOOP;
        IF v_adv_at IS NOT NULL THEN
            UPDATE ${schema}.claim_ring_slots s
               SET deadline_cursor_deadline_at = v_adv_at, deadline_cursor_job_id = v_adv_id,
                   deadline_cursor_run_lease = v_adv_rl
             WHERE s.slot = v_slot;
        END IF;
    END LOOP;
END
$$;

-- Destructive-upgrade guard (DESIGN.md §10): a legacy open_receipt_claims frontier table is dropped when empty;
-- when it holds rows, nothing is touched and the row count is returned so startup can refuse. -1: no such table.
CREATE FUNCTION ${schema}.upgrade_guard() RETURNS bigint
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    v_n bigint;
BEGIN
    IF to_regclass(format('%s.%I', '${schema}', 'open_receipt_claims')) IS NULL THEN
        RETURN -1;
    END IF;
    EXECUTE format('SELECT count(*) FROM %s.%I', '${schema}', 'open_receipt_claims') INTO v_n;
    IF v_n = 0 THEN
        EXECUTE format('DROP TABLE %s.%I', '${schema}', 'open_receipt_claims');
        RETURN 0;
    END IF;
    RETURN v_n;
END
$$;
