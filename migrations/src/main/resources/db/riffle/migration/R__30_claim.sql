-- Claim: lane selection, cursor healing, the claim itself and the post-commit cursor advance. The materialized claim
-- shape (claim_materialized) belongs to the leases and lives in R__70_long_attempts.sql.
-- Repeatable migration (docs/adr/0007): functions only, each as CREATE OR REPLACE, re-applied by Flyway
-- whenever this file changes. Tables, types and indexes live in the versioned V__ files; a function whose
-- signature changes is dropped there first.

-- The hot-path rules in the header of R__20_enqueue.sql hold here too.

-- The lane's first committed segment that ends past p_after (docs/design/delivery-contract.md), for claim. The usual read goes
-- through the partitioned parent, which needs a lock on every queue-ring child: a prune holding (or queued for)
-- ACCESS EXCLUSIVE on a child would make the claim wait for the whole TRUNCATE, its index rebuilds and their fsyncs
-- (docs/design/lock-order.md). So that read may wait 2 ms at most and otherwise fails the claim statement with
-- lock_not_available (55P03); the client then claims again with p_avoid_parent, which reads each child on its own
-- and skips a child it cannot lock within 2 ms, reporting that in "skipped". A skipped child may hold the lane's next
-- rows (prune only takes inert slots, but an operator's lock could be anywhere), so the caller must not treat the
-- positions before the segment found as dead while skipped is true. The usual path has no exception block, since
-- a subtransaction per claim measurably slowed every claim.
CREATE OR REPLACE FUNCTION ${schema}.lane_segment(p_queue text, p_priority smallint, p_shard smallint, p_after bigint,
                                       p_avoid_parent boolean,
                                       OUT ready_slot int, OUT ready_generation bigint, OUT first_lane_seq bigint,
                                       OUT next_lane_seq bigint, OUT skipped boolean)
-- The 2 ms is the function's SET clause: the executor sets it on entry and restores the caller's value on exit, which
-- costs less than reading, setting and restoring it with three statements on every call (claims call this function
-- once or twice each).
LANGUAGE plpgsql VOLATILE SET plan_cache_mode = force_generic_plan SET lock_timeout = '2ms' AS $$
#variable_conflict use_column
DECLARE
    n      int;
    s      int;
    c      record;
BEGIN
    skipped := false;
    IF NOT p_avoid_parent THEN
        -- Most claims read recent work: look first for the segment that holds p_after in the current queue-ring
        -- slot. The slot is a parameter of the generic plan, so the executor prunes the scan to that one child
        -- instead of descending every child's index (0.27-0.29 ms -> 0.16-0.20 ms per call, 16 slots, session 5).
        -- Only a segment containing p_after is taken from it: lane segments never overlap, so no other segment
        -- can end between p_after and its end, while a segment of the current slot that merely ends past p_after
        -- may have older segments of the lane, in older slots, before it (LaneAcrossSlotsIT).
        SELECT r.slot INTO s FROM ${schema}.queue_ring_rotations r ORDER BY r.generation DESC LIMIT 1;
        SELECT rs.ready_slot, rs.ready_generation, rs.first_lane_seq, rs.next_lane_seq
          INTO ready_slot, ready_generation, first_lane_seq, next_lane_seq
          FROM ${schema}.ready_segments rs
         WHERE rs.ready_slot = s
           AND rs.queue = p_queue AND rs.priority = p_priority AND rs.enqueue_shard = p_shard
           AND rs.next_lane_seq > p_after AND rs.first_lane_seq <= p_after
         ORDER BY rs.next_lane_seq
         LIMIT 1;
        IF FOUND THEN
            RETURN;
        END IF;
        SELECT rs.ready_slot, rs.ready_generation, rs.first_lane_seq, rs.next_lane_seq
          INTO ready_slot, ready_generation, first_lane_seq, next_lane_seq
          FROM ${schema}.ready_segments rs
         WHERE rs.queue = p_queue AND rs.priority = p_priority AND rs.enqueue_shard = p_shard AND rs.next_lane_seq > p_after
         ORDER BY rs.next_lane_seq
         LIMIT 1;
        RETURN;
    END IF;
    SELECT q.slot_count INTO n FROM ${schema}.queue_ring_state q;
    FOR s IN 0 .. n - 1 LOOP
        BEGIN
            EXECUTE format('SELECT rs.ready_slot, rs.ready_generation, rs.first_lane_seq, rs.next_lane_seq
                              FROM %s.%I rs
                             WHERE rs.queue = $1 AND rs.priority = $2 AND rs.enqueue_shard = $3 AND rs.next_lane_seq > $4
                             ORDER BY rs.next_lane_seq LIMIT 1', '${schema}', 'ready_segments_' || s)
               INTO c USING p_queue, p_priority, p_shard, p_after;
        EXCEPTION WHEN lock_not_available THEN
            skipped := true;
            CONTINUE;
        END;
        IF c.next_lane_seq IS NOT NULL AND (next_lane_seq IS NULL OR c.next_lane_seq < next_lane_seq) THEN
            ready_slot := c.ready_slot;
            ready_generation := c.ready_generation;
            first_lane_seq := c.first_lane_seq;
            next_lane_seq := c.next_lane_seq;
        END IF;
    END LOOP;
END
$$;

-- The cursor-healing probes of select_claim_lane at one lane position, in ready slot p_slot: the first claim evidence
-- row of the lane ending past the position (ev_first, ev_ranges), and, only when that row does not cover the position,
-- whether a tombstone marks it dead. Static per ready slot for the reasons given at define_claim_compact below:
-- define_lane_probes writes lane_probe_<slot> per queue-ring slot and lane_probe, which picks it with a CASE.
CREATE OR REPLACE FUNCTION ${schema}.define_lane_probes() RETURNS void
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    n      int;
    s      int;
BEGIN
    SELECT q.slot_count INTO n FROM ${schema}.queue_ring_state q;
    FOR s IN 0 .. n - 1 LOOP
        -- $1..$6: the parameters, in order.
        EXECUTE format($f$
CREATE OR REPLACE FUNCTION %1$s.%2$I(p_slot int, p_generation bigint, p_queue text, p_priority smallint,
                                     p_shard smallint, p_pos bigint,
                                     OUT ev_first bigint, OUT ev_ranges int8multirange, OUT dead boolean)
LANGUAGE plpgsql VOLATILE SET plan_cache_mode = force_generic_plan SET enable_seqscan = off AS $fn$
BEGIN
    SELECT e.first_lane_seq, e.lane_ranges INTO ev_first, ev_ranges
      FROM %1$s.%3$I e
     WHERE e.ready_generation = $2 AND e.queue = $3 AND e.priority = $4 AND e.enqueue_shard = $5
       AND e.next_lane_seq > $6
     ORDER BY e.next_lane_seq LIMIT 1;
    IF ev_first IS NOT NULL AND ev_first <= $6 AND ev_ranges @> $6 THEN
        dead := false;
        RETURN;
    END IF;
    dead := EXISTS (SELECT 1 FROM %1$s.%4$I t
                     WHERE t.ready_slot = $1 AND t.queue = $3 AND t.priority = $4 AND t.enqueue_shard = $5
                       AND t.lane_seq = $6 AND t.ready_generation = $2);
END
$fn$
$f$, '${schema}', 'lane_probe_' || s, 'ready_claim_attempt_batches_' || s, 'ready_tombstones_' || s);
    END LOOP;

    PERFORM ${schema}.define_slot_dispatcher('lane_probe', 'lane_probe',
        'p_slot int, p_generation bigint, p_queue text, p_priority smallint, p_shard smallint, p_pos bigint,
         OUT ev_first bigint, OUT ev_ranges int8multirange, OUT dead boolean',
        '', 'p_slot', 'SELECT * INTO ev_first, ev_ranges, dead FROM %s($1, $2, $3, $4, $5, $6)', n);
END
$$;

SELECT ${schema}.define_lane_probes();

-- Priority aging (issue #14 item 6, docs/limits.md#priority-aging): the priority a lane is claimed at, for a queue
-- with priority_aging_ms set. The lane's head has been runnable since the first_run_at of the lane's first segment
-- ending past the claim cursor (segments are split where run_at changes, so that holds for every row of it). A
-- cursor still behind its post-commit advance would point at rows already claimed: when claim evidence covers the
-- position (lane_probe, as in select_claim_lane's healing), the lookup moves past it, once or twice; beyond that
-- the lane may look a little older than it is. Every full step of waiting lifts the lane one priority, never above
-- 1. Nothing is written: the stored lane priority is unchanged, and claimed jobs carry it (effective priority is
-- for ordering only). The read goes through the ready_segments parent like lane_segment's, with the same 2 ms
-- lock_timeout; a claim that fails on it is retried with p_avoid_parent, and then lanes keep their stored priority.
CREATE OR REPLACE FUNCTION ${schema}.lane_effective_priority(p_queue text, p_priority smallint, p_shard smallint,
                                                  p_claim_seq text, p_step_ms bigint, p_avoid_parent boolean)
RETURNS int
LANGUAGE plpgsql VOLATILE SET plan_cache_mode = force_generic_plan AS $$
DECLARE
    v_prev   text;
    v_pos    bigint;
    v_at     bigint;
    v_run_at timestamptz;
    seg      record;
    ev       record;
BEGIN
    IF p_avoid_parent OR p_priority <= 1 THEN
        RETURN p_priority;
    END IF;
    v_prev := current_setting('lock_timeout');
    PERFORM set_config('lock_timeout', '2ms', true);
    v_pos := ${schema}.seq_next(p_claim_seq);
    FOR i IN 1 .. 3 LOOP
        SELECT rs.ready_slot, rs.ready_generation, rs.first_lane_seq, rs.first_run_at INTO seg
          FROM ${schema}.ready_segments rs
         WHERE rs.queue = p_queue AND rs.priority = p_priority AND rs.enqueue_shard = p_shard
           AND rs.next_lane_seq > v_pos
         ORDER BY rs.next_lane_seq
         LIMIT 1;
        EXIT WHEN NOT FOUND;
        v_run_at := seg.first_run_at;
        v_at := greatest(v_pos, seg.first_lane_seq);
        SELECT * INTO ev FROM ${schema}.lane_probe(seg.ready_slot, seg.ready_generation, p_queue, p_priority, p_shard,
                                                   v_at);
        EXIT WHEN ev.ev_first IS NULL OR ev.ev_first > v_at OR NOT (ev.ev_ranges @> v_at);
        SELECT upper(r) INTO v_pos FROM unnest(ev.ev_ranges) r WHERE r @> v_at;
        v_run_at := NULL;
    END LOOP;
    PERFORM set_config('lock_timeout', v_prev, true);
    IF v_run_at IS NULL OR v_run_at >= clock_timestamp() THEN
        RETURN p_priority;
    END IF;
    RETURN greatest(1, p_priority - floor(extract(epoch FROM clock_timestamp() - v_run_at) * 1000 / p_step_ms))::int;
END
$$;

-- Steps A and B/E of a claim (claim_ready; docs/design/delivery-contract.md), shared by both claim shapes:
--   A. lock one lane head with work, FOR UPDATE SKIP LOCKED (highest lane priority first, random among equals);
--   B/E. walk the cursor over positions that are provably spent: dead reservation gaps below the first visible
--      segment, positions covered by committed claim-attempt evidence, tombstones. That is safe inside this
--      transaction because it only skips committed facts, and it is also how a lost post-commit advance heals
--      (docs/adr/0002-lazy-claim-cursor-healing.md).
-- The head lock is a row lock, so it stays held after this function returns, until the claim's transaction ends:
-- the tail that writes the claim runs under it. status is 'ready' when a lane was locked with claimable positions:
-- the lane, the ready slot and generation of its next committed segment, the healed cursor (from_lane_seq) and how
-- many positions a claim of p_max may take (claim_limit: p_max, or fewer if the lane has fewer). Otherwise status
-- is 'empty' (no visible work) or 'busy' (every lane with work is being claimed by someone else, or its next rows
-- sit in a child that lane_segment could not lock) and the other columns are NULL.
CREATE OR REPLACE FUNCTION ${schema}.select_claim_lane(p_queues text[], p_max int, p_avoid_parent boolean,
                                            OUT status text, OUT queue text, OUT priority smallint,
                                            OUT enqueue_shard smallint, OUT ready_slot int, OUT ready_generation bigint,
                                            OUT from_lane_seq bigint, OUT claim_limit int)
LANGUAGE plpgsql VOLATILE SET plan_cache_mode = force_generic_plan SET enable_seqscan = off AS $$
#variable_conflict use_column
DECLARE
    h       record;
    seg     record;
    ev      record;
    v_cur   bigint;
    v_start bigint;
    v_enq   bigint;
    v_iter  int := 0;
    v_seg_end bigint;
    v_lanes int := 0;
    v_busy  boolean := false;
    v_locked boolean := false;
    v_found boolean := false;
BEGIN
    -- The subscription's lanes, highest priority first and in random order among equals. Whether a lane has work
    -- (its claim cursor behind its enqueue cursor) is checked lane by lane, in that order, and only until one lane is
    -- taken: in a backlog that is the first lane, so a claim reads two lane sequences instead of two per lane of the
    -- queue (each read locks and opens the sequence: with 8 lanes, 16 of a claim's 77 relation locks went to them).
    -- A lane can look like it has work only because its cursor lags behind committed claims; after healing such a
    -- lane, the next one is tried instead of reporting the queue empty.
    FOR h IN
        SELECT ch.queue AS q, ch.priority AS p, ch.enqueue_shard AS s, ch.seq_name AS cseq, eh.seq_name AS eseq
          FROM ${schema}.queue_claim_heads ch
          JOIN ${schema}.queue_enqueue_heads eh
            ON eh.queue = ch.queue AND eh.priority = ch.priority AND eh.enqueue_shard = ch.enqueue_shard
          LEFT JOIN ${schema}.queue_meta m ON m.queue = ch.queue
         WHERE ch.queue = ANY (p_queues)
           AND m.paused IS NOT TRUE
         -- Priority aging (docs/limits.md#priority-aging): only a lane with work of a queue whose queue_meta row has
         -- priority_aging_ms pays for lane_effective_priority; CASE evaluates the call only in its branch, so every
         -- other lane is ordered by its stored priority.
         ORDER BY CASE WHEN m.priority_aging_ms IS NULL OR ch.priority = 1
                         OR ${schema}.seq_next(ch.seq_name) >= ${schema}.seq_next(eh.seq_name) THEN ch.priority
                       ELSE ${schema}.lane_effective_priority(ch.queue, ch.priority, ch.enqueue_shard, ch.seq_name,
                                                              m.priority_aging_ms, p_avoid_parent) END,
                  random()
    LOOP
        CONTINUE WHEN ${schema}.seq_next(h.cseq) >= ${schema}.seq_next(h.eseq);
        PERFORM 1 FROM ${schema}.queue_claim_heads ch
         WHERE ch.queue = h.q AND ch.priority = h.p AND ch.enqueue_shard = h.s
           FOR UPDATE SKIP LOCKED;
        IF NOT FOUND THEN
            -- Another claimer holds this lane (or it was just removed): the work stays for it or for a later claim.
            v_locked := true;
            CONTINUE;
        END IF;
        v_lanes := v_lanes + 1;
        IF v_lanes > 64 THEN
            EXIT;
        END IF;

        -- Re-read both cursors now that the head is ours (another claimer may have moved it before we locked).
        v_cur   := ${schema}.seq_next(h.cseq);
        v_enq   := ${schema}.seq_next(h.eseq);
        v_start := v_cur;
        v_iter  := 0;
        v_seg_end := NULL;

        LOOP
            v_iter := v_iter + 1;
            EXIT WHEN v_iter > 10000;
            -- After healing moved the cursor forward inside the segment found last, that segment is still the lane's
            -- first committed one ending past the cursor (a lane's segments never overlap, and the cursor is at or
            -- past its start), so only the probe runs again. A cursor behind its post-commit advance is healed this
            -- way on about half of all claims (W=64 drain), and the lookup skipped was about 160 us each.
            IF v_seg_end IS NULL OR v_cur >= v_seg_end THEN
                SELECT * INTO seg FROM ${schema}.lane_segment(h.q, h.p, h.s, v_cur, p_avoid_parent);
                IF seg.skipped AND (seg.next_lane_seq IS NULL OR seg.first_lane_seq > v_cur) THEN
                    -- The lane's next rows may sit in the child we could not read: claim nothing from it now.
                    v_busy := true;
                    seg := NULL;
                    EXIT;
                END IF;
                IF seg.next_lane_seq IS NULL THEN
                    seg := NULL;
                    EXIT;
                END IF;
                v_seg_end := seg.next_lane_seq;
                -- Positions below the first visible committed segment are dead: a later reservation can only be
                -- made after every earlier reservation of the lane committed or aborted.
                IF seg.first_lane_seq > v_cur THEN
                    v_cur := seg.first_lane_seq;
                END IF;
            END IF;
            -- Claim evidence, then a tombstone, at this position (lane_probe, below: static per ready slot).
            SELECT * INTO ev FROM ${schema}.lane_probe(seg.ready_slot, seg.ready_generation, h.q, h.p, h.s, v_cur);
            IF ev.ev_first IS NOT NULL AND ev.ev_first <= v_cur AND ev.ev_ranges @> v_cur THEN
                SELECT upper(r) INTO v_cur FROM unnest(ev.ev_ranges) r WHERE r @> v_cur;
                CONTINUE;
            END IF;
            IF ev.dead THEN
                v_cur := v_cur + 1;
                CONTINUE;
            END IF;
            EXIT;
        END LOOP;

        IF v_cur > v_start THEN
            PERFORM ${schema}.set_seq_next(h.cseq, v_cur);
        END IF;

        IF seg IS NOT NULL AND v_cur < v_enq THEN
            v_found := true;
            EXIT;
        END IF;
    END LOOP;

    IF NOT v_found THEN
        -- 'busy': a lane with work is being claimed by someone else, or its next rows sit in a child that could not
        -- be read past a lock; retry soon rather than wait for a NOTIFY. Otherwise nothing visible is left.
        status := CASE WHEN v_busy OR v_locked THEN 'busy' ELSE 'empty' END;
        RETURN;
    END IF;

    status           := 'ready';
    queue            := h.q;
    priority         := h.p;
    enqueue_shard    := h.s;
    ready_slot       := seg.ready_slot;
    ready_generation := seg.ready_generation;
    from_lane_seq    := v_cur;
    claim_limit      := least(p_max::bigint, v_enq - v_cur)::int;
END
$$;

-- Step F of a claim in the compact shape (the default; docs/design/storage-planes.md#receipt-plane-the-claim-ring),
-- on a lane that select_claim_lane locked and healed: take the next p_limit rows of the lane from p_from_lane_seq
-- in the ready slot p_ready_slot, and append exactly one ready_claim_attempt_batches row (the positions claimed)
-- and exactly one lease_claim_batches row (arrays, one shared claimed_at and deadline_at, both from the database
-- clock; no deadline unless p_deadline_secs > 0) in the current claim slot. Every row returned belongs to that one
-- batch, in lane order (batch_index 1..n).
-- The range bound on lane_seq keeps the selection an index range of at most 2 x limit rows whatever the planner
-- believes about the child (ring children are truncated and refilled faster than statistics follow; with no estimate
-- a planner sorts every ready row of the lane for a LIMIT). Tombstones inside the range only make the claim smaller,
-- never wrong: the caller claims again. The tombstones of that range are read once per claim, as one index range of
-- the child (an uncorrelated ARRAY sublink, evaluated once), not probed once per candidate row: a 128-job claim made
-- 128 index descents into a child that is almost always empty. The sel, items and evidence parts of this statement are the same text in
-- claim_materialized (R__70_long_attempts.sql); ClaimTemplatesTest holds them equal.
--
-- Static statements per ready slot (docs/adr/0009): define_claim_compact writes one function claim_compact_<slot> per
-- queue-ring slot, whose statement names that slot's children, and claim_compact_slot, which picks the slot's
-- function with a CASE (define_slot_dispatcher, R__02_slot_functions.sql); claim_limited, below, calls it. The
-- statement used to be built with format() and run with EXECUTE on every claim, and parsing and planning it was about
-- 40 % of a backend's CPU in a loop of 16-job claims and completions (perf, session 4); a static statement is planned
-- once per session and slot (generic plan) and replanned only when its child changes (a prune's TRUNCATE). Naming the
-- child keeps the claim's locks on that one slot, as before (docs/design/lock-order.md): a prune holding another slot
-- never blocks it. The claim slot is only known at run time, so the batch row goes through the lease_claim_batches
-- parent, whose tuple routing locks just the current claim slot's child. The ring's slot count is fixed when the
-- schema is created (V1), so the functions are written once here, whenever this file is applied.
CREATE OR REPLACE FUNCTION ${schema}.define_claim_compact() RETURNS void
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    -- The result columns of claim_compact, claim_materialized and claim_ready.
    c_cols constant text := 'status text, job_id bigint, kind text, queue text, args jsonb, priority smallint,
               attempt smallint, run_lease bigint, max_attempts smallint, lane_seq bigint, enqueue_shard smallint,
               ready_slot int, ready_generation bigint, claim_slot int, batch_id bigint, batch_index int,
               receipt_id bigint, claimed_at timestamptz, deadline_at timestamptz, created_at timestamptz,
               payload jsonb, lease_slot int';
    n      int;
    s      int;
BEGIN
    SELECT q.slot_count INTO n FROM ${schema}.queue_ring_state q;
    FOR s IN 0 .. n - 1 LOOP
        -- $1..$10 in the statement are the function's parameters, in the order of claim_limited's call below.
        EXECUTE format($f$
CREATE OR REPLACE FUNCTION %1$s.%2$I(p_queue text, p_priority smallint, p_shard smallint, p_from_lane_seq bigint,
                                     p_ready_generation bigint, p_limit int, p_ready_slot int, p_claim_slot int,
                                     p_claimed_at timestamptz, p_deadline timestamptz)
RETURNS TABLE (%3$s)
LANGUAGE plpgsql VOLATILE SET plan_cache_mode = force_generic_plan SET enable_seqscan = off AS $fn$
#variable_conflict use_column
BEGIN
    RETURN QUERY %4$s;
END
$fn$
$f$, '${schema}', 'claim_compact_' || s, c_cols, format($q$
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
    cb AS (
        INSERT INTO %1$s.lease_claim_batches (claim_slot, ready_slot, ready_generation, queue, priority, enqueue_shard,
                               claimed_count, job_ids, run_leases, receipt_ids, lane_seqs, attempts,
                               max_attempts, receipt_ranges, deadline_at, claimed_at)
        SELECT $8, $7, $5, $1, $2, $3, count(*),
               array_agg(i.job_id ORDER BY i.idx), array_agg(i.run_lease + 1 ORDER BY i.idx),
               array_agg(i.rid ORDER BY i.idx), array_agg(i.lane_seq ORDER BY i.idx),
               array_agg((i.attempt + 1)::smallint ORDER BY i.idx), array_agg(i.max_attempts ORDER BY i.idx),
               range_agg(int8range(i.rid, i.rid + 1)), $10, $9
          FROM items i
        HAVING count(*) > 0
        RETURNING batch_id
    )
    SELECT 'claimed'::text, i.job_id, i.kind, $1, i.args, $2, (i.attempt + 1)::smallint, i.run_lease + 1,
           i.max_attempts, i.lane_seq, $3, $7, $5, $8, cb.batch_id, i.idx, i.rid, $9, $10, i.created_at, i.payload,
           NULL::int
      FROM items i CROSS JOIN cb
     ORDER BY i.idx
    $q$, '${schema}', 'ready_entries_' || s, 'ready_tombstones_' || s, 'ready_claim_attempt_batches_' || s));
    END LOOP;

    PERFORM ${schema}.define_slot_dispatcher('claim_compact_slot', 'claim_compact',
        'p_queue text, p_priority smallint, p_shard smallint, p_from_lane_seq bigint, p_ready_generation bigint,
         p_limit int, p_ready_slot int, p_claim_slot int, p_claimed_at timestamptz, p_deadline timestamptz',
        'RETURNS TABLE (' || c_cols || ')', 'p_ready_slot',
        'RETURN QUERY SELECT * FROM %s($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)', n);
END
$$;

SELECT ${schema}.define_claim_compact();

-- The claim (claim_ready, below), with the lane's claim capped at p_caps[i] for queue p_queues[i] (NULL, or a NULL
-- array: no cap beyond p_max). For a subscription with a limited queue (R__35_limits.sql, docs/limits.md) the engine
-- passes only queues it may claim from now (cap > 0) and reserves each cap before the call, so concurrent claims of
-- one engine cannot both take the same room.
CREATE OR REPLACE FUNCTION ${schema}.claim_limited(p_queues text[], p_deadline_secs int[], p_max int,
                                                   p_materialize boolean[], p_avoid_parent boolean, p_caps int[])
RETURNS TABLE (status text, job_id bigint, kind text, queue text, args jsonb, priority smallint, attempt smallint,
               run_lease bigint, max_attempts smallint, lane_seq bigint, enqueue_shard smallint, ready_slot int,
               ready_generation bigint, claim_slot int, batch_id bigint, batch_index int, receipt_id bigint,
               claimed_at timestamptz, deadline_at timestamptz, created_at timestamptz, payload jsonb, lease_slot int)
LANGUAGE plpgsql VOLATILE SET plan_cache_mode = force_generic_plan SET enable_seqscan = off AS $$
#variable_conflict use_column
DECLARE
    l       record;
    v_q     int;
    v_dl    int;
    v_mat   boolean;
    v_limit int;
    v_claimed_at timestamptz;
    v_deadline   timestamptz;
    v_claim_slot int;
BEGIN
    SELECT * INTO l FROM ${schema}.select_claim_lane(p_queues, p_max, p_avoid_parent);
    IF l.status <> 'ready' THEN
        status := l.status;
        RETURN NEXT;
        RETURN;
    END IF;

    v_q     := array_position(p_queues, l.queue);
    v_dl    := coalesce(p_deadline_secs[v_q], 0);
    v_mat   := coalesce(p_materialize[v_q], false);
    v_limit := least(l.claim_limit, coalesce(p_caps[v_q], l.claim_limit));
    IF v_mat THEN
        RETURN QUERY SELECT * FROM ${schema}.claim_materialized(l.queue, l.priority, l.enqueue_shard, l.ready_slot,
                                                                l.ready_generation, l.from_lane_seq, v_limit, v_dl);
    ELSE
        -- Step F in the compact shape: the claim's one clock reading, its deadline and the current claim slot, then
        -- the ready slot's statement through claim_compact_slot.
        v_claimed_at := clock_timestamp();
        v_deadline   := CASE WHEN v_dl > 0 THEN v_claimed_at + make_interval(secs => v_dl) END;
        SELECT cr.slot INTO v_claim_slot FROM ${schema}.claim_ring_rotations cr ORDER BY cr.generation DESC LIMIT 1;
        RETURN QUERY SELECT * FROM ${schema}.claim_compact_slot(l.queue, l.priority, l.enqueue_shard, l.from_lane_seq,
                                                                l.ready_generation, v_limit, l.ready_slot,
                                                                v_claim_slot, v_claimed_at, v_deadline);
    END IF;
END
$$;

-- Claim up to p_max jobs from one lane of the given queues (docs/design/delivery-contract.md), as one statement:
-- select_claim_lane locks a lane head and heals its cursor (steps A and B/E), then the claim is written in the
-- queue's shape (step F): claim_compact by default, claim_materialized (R__70_long_attempts.sql) for a queue whose
-- p_materialize entry is true. p_queues, p_deadline_secs and p_materialize are parallel arrays.
-- The cursor is not moved over the newly claimed rows here: sequences do not roll back (docs/design/delivery-contract.md).
-- When nothing is claimed, one row comes back with status 'empty' (no visible work) or 'busy' (work exists but
-- every lane with work is being claimed by someone else right now), and job_id NULL.
CREATE OR REPLACE FUNCTION ${schema}.claim_ready(p_queues text[], p_deadline_secs int[], p_max int,
                                      p_materialize boolean[] DEFAULT '{}', p_avoid_parent boolean DEFAULT false)
RETURNS TABLE (status text, job_id bigint, kind text, queue text, args jsonb, priority smallint, attempt smallint,
               run_lease bigint, max_attempts smallint, lane_seq bigint, enqueue_shard smallint, ready_slot int,
               ready_generation bigint, claim_slot int, batch_id bigint, batch_index int, receipt_id bigint,
               claimed_at timestamptz, deadline_at timestamptz, created_at timestamptz, payload jsonb, lease_slot int)
LANGUAGE plpgsql VOLATILE SET plan_cache_mode = force_generic_plan SET enable_seqscan = off AS $$
BEGIN
    -- One body for both: the uncapped claim is the capped one without caps.
    RETURN QUERY SELECT * FROM ${schema}.claim_limited(p_queues, p_deadline_secs, p_max, p_materialize,
                                                       p_avoid_parent, NULL);
END
$$;

-- Post-commit claim cursor advance (docs/design/delivery-contract.md), for several lanes in one statement. Monotonic. A lane
-- whose head is locked by a claimer right now is skipped: that claimer heals the cursor from the evidence rows.
CREATE OR REPLACE FUNCTION ${schema}.advance_claim_cursors(p_queues text[], p_priorities smallint[], p_shards smallint[],
                                                p_nexts bigint[])
RETURNS int
LANGUAGE plpgsql VOLATILE SET plan_cache_mode = force_generic_plan AS $$
DECLARE
    l       record;
    v_moved int := 0;
BEGIN
    FOR l IN
        SELECT ch.seq_name, max(x.nxt) AS nxt
          FROM unnest(p_queues, p_priorities, p_shards, p_nexts) AS x(queue, priority, shard, nxt)
          JOIN ${schema}.queue_claim_heads ch
            ON ch.queue = x.queue AND ch.priority = x.priority AND ch.enqueue_shard = x.shard
         GROUP BY ch.queue, ch.priority, ch.enqueue_shard, ch.seq_name
         ORDER BY ch.queue, ch.priority, ch.enqueue_shard
    LOOP
        PERFORM 1 FROM ${schema}.queue_claim_heads ch WHERE ch.seq_name = l.seq_name FOR UPDATE SKIP LOCKED;
        IF FOUND THEN
            PERFORM ${schema}.set_seq_next(l.seq_name, l.nxt);
            v_moved := v_moved + 1;
        END IF;
    END LOOP;
    RETURN v_moved;
END
$$;
