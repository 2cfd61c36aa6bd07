-- Rescue: stale and deadline sweeps on the receipt side, and the lease-side sweep (stale leases, callback timeouts).
-- Repeatable migration (docs/adr/0007): functions only, each as CREATE OR REPLACE, re-applied by Flyway
-- whenever this file changes. Tables, types and indexes live in the versioned V__ files; a function whose
-- signature changes is dropped there first.

-- Maintenance (docs/design/maintenance.md). Every function is safe when two leaders overlap: rescue serializes on the slot's
-- cursor row and on per-attempt try-locks.

-- Stale rescue (docs/design/delivery-contract.md), receipt side, one pass over the claim slots, oldest first. The window holds
-- compact items and row-local claims alike; a claim whose attempt has a lease belongs to the lease side
-- (rescue_leases) and is passed over here. Per slot: take the cursor row
-- (an overlapping leader's pass then runs after this one, with fresh snapshots), read a window of claims older than the cutoff after the
-- cursor (wrapping), find the open ones without fresh heartbeat evidence, try-lock them (a completion in flight
-- wins: skip, do not wait), close them through close_compact in a NEW statement (fresh snapshot after the locks),
-- and advance the cursor over the longest prefix that is closed, alive, or closed now; the first stale claim that
-- could not be closed stops it. Rescued attempts are routed to retry (or failure/DLQ when exhausted) and their
-- workers are told through the cancel channel. Cutoffs use the database clock.
CREATE OR REPLACE FUNCTION ${schema}.rescue_stale(p_stale_secs double precision, p_budget int, p_window int, p_dlq boolean)
RETURNS TABLE (job_id bigint, run_lease bigint, disposition text)
LANGUAGE plpgsql VOLATILE SET plan_cache_mode = force_custom_plan AS $$
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
        -- Each half of the walk reads only the batches that can hold its items: a batch's items share its
        -- claimed_at, so one claimed before the cursor's has no item after the cursor (and one claimed after it none
        -- at or before). Both halves used to unnest every batch of the slot older than the cutoff and sort it all.
        -- The per-candidate probes are cheap where the slot is quiet: closure evidence is one index search for the
        -- closure rows overlapping all candidates' receipts, merged into one multirange that each candidate is
        -- looked up in (instead of one index probe per candidate); the lease and heartbeat probes run only when
        -- the leases and attempt_state tables have any row ($7, $8, read just before). Those two flags may miss a
        -- lease or heartbeat written after they were read: the re-judge under the attempt locks below reads both
        -- again with a fresh snapshot, so such a candidate is not closed, and the cursor stops before it.
        EXECUTE format($q$
            WITH after AS (
                SELECT *, 0 AS lap
                  FROM (SELECT b.claimed_at, i.jid, i.rl, i.rid, b.batch_id, i.idx::int AS idx
                          FROM %1$s.%2$I b
                         CROSS JOIN LATERAL unnest(b.job_ids, b.run_leases, b.receipt_ids)
                               WITH ORDINALITY AS i(jid, rl, rid, idx)
                         WHERE b.claimed_at < $1 AND b.claimed_at >= $2
                        UNION ALL
                        SELECT c.claimed_at, c.job_id, c.run_lease, c.receipt_id, 0::bigint, 0
                          FROM %1$s.%4$I c
                         WHERE c.claimed_at < $1 AND c.claimed_at >= $2) x
                 WHERE (x.claimed_at, x.jid, x.rl) > ($2, $3, $4)
                 ORDER BY x.claimed_at, x.jid, x.rl LIMIT $5
            ),
            wrapped AS (
                SELECT *, 1 AS lap
                  FROM (SELECT b.claimed_at, i.jid, i.rl, i.rid, b.batch_id, i.idx::int AS idx
                          FROM %1$s.%2$I b
                         CROSS JOIN LATERAL unnest(b.job_ids, b.run_leases, b.receipt_ids)
                               WITH ORDINALITY AS i(jid, rl, rid, idx)
                         WHERE b.claimed_at < $1 AND b.claimed_at <= $2
                        UNION ALL
                        SELECT c.claimed_at, c.job_id, c.run_lease, c.receipt_id, 0::bigint, 0
                          FROM %1$s.%4$I c
                         WHERE c.claimed_at < $1 AND c.claimed_at <= $2) x
                 WHERE (x.claimed_at, x.jid, x.rl) <= ($2, $3, $4)
                 ORDER BY x.claimed_at, x.jid, x.rl LIMIT greatest($5 - (SELECT count(*) FROM after), 0)
            ),
            cand AS MATERIALIZED (
                SELECT x.*, row_number() OVER (ORDER BY x.lap, x.claimed_at, x.jid, x.rl) AS rn
                  FROM (SELECT * FROM after UNION ALL SELECT * FROM wrapped) x
            ),
            closed_ranges AS MATERIALIZED (
                SELECT range_agg(r.r) AS mr
                  FROM %1$s.%3$I cl, unnest(cl.receipt_ranges) AS r(r)
                 WHERE cl.receipt_ranges && (SELECT range_agg(int8range(cand.rid, cand.rid + 1)) FROM cand
                                              WHERE cand.batch_id <> 0)
            )
            SELECT coalesce(array_agg(cand.rn ORDER BY cand.rn), '{}') AS rns,
                   coalesce(array_agg(cand.claimed_at ORDER BY cand.rn), '{}') AS ats,
                   coalesce(array_agg(cand.jid ORDER BY cand.rn), '{}') AS jids,
                   coalesce(array_agg(cand.rl ORDER BY cand.rn), '{}') AS rls,
                   coalesce(array_agg(cand.rid ORDER BY cand.rn), '{}') AS rids,
                   coalesce(array_agg(cand.batch_id ORDER BY cand.rn), '{}') AS bids,
                   coalesce(array_agg(cand.idx ORDER BY cand.rn), '{}') AS idxs,
                   coalesce(array_agg(CASE WHEN cand.batch_id <> 0
                                           THEN coalesce((SELECT cr.mr FROM closed_ranges cr) @> cand.rid, false)
                                           ELSE EXISTS (SELECT 1 FROM %1$s.%4$I c WHERE c.claim_slot = $6
                                                           AND c.job_id = cand.jid AND c.run_lease = cand.rl
                                                           AND c.closed_at IS NOT NULL)
                                                OR EXISTS (SELECT 1 FROM %1$s.%5$I e WHERE e.claim_slot = $6
                                                              AND e.job_id = cand.jid AND e.run_lease = cand.rl) END
                                      ORDER BY cand.rn), '{}') AS closed,
                   coalesce(array_agg($7 AND EXISTS (SELECT 1 FROM %1$s.leases l
                                                      WHERE l.job_id = cand.jid AND l.run_lease = cand.rl)
                                      ORDER BY cand.rn), '{}') AS leased,
                   coalesce(array_agg(coalesce(CASE WHEN $8 THEN (SELECT a.heartbeat_at FROM %1$s.attempt_state a
                                                                   WHERE a.job_id = cand.jid
                                                                     AND a.run_lease = cand.rl) END,
                                               cand.claimed_at) < $1
                                      ORDER BY cand.rn), '{}') AS stale
              FROM cand
            $q$, '${schema}', 'lease_claim_batches_' || v_slot, 'lease_claim_closure_batches_' || v_slot,
                 'lease_claims_' || v_slot, 'lease_claim_closures_' || v_slot)
           INTO w
           USING v_cutoff, cur.rescue_cursor_claimed_at, cur.rescue_cursor_job_id, cur.rescue_cursor_run_lease, p_window,
                 v_slot, EXISTS (SELECT 1 FROM ${schema}.leases), EXISTS (SELECT 1 FROM ${schema}.attempt_state);
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
                IF r.st = 'applied' THEN
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

-- Deadline rescue (docs/design/delivery-contract.md), both receipt shapes: per claim slot, oldest first, sharing one budget.
--   Compact batches: a cursor over (deadline_at, batch_id) walks batches whose shared deadline has passed (database
--   clock), wrapping. Each expired batch is expanded; its due members are try-locked and closed with outcome
--   'deadline_expired' (routed to retry, or failure/DLQ when exhausted). The cursor passes a batch only when no due
--   member is left open; a partially rescued batch stops it, so it is revisited.
--   Row-local claims: a cursor over (deadline_at, job_id, run_lease) walks expired lease_claims rows the same way,
--   closing into explicit closures; the first due claim it cannot close stops it.
-- A member whose attempt has a lease is due only while the lease is running with an expired deadline: a lease
-- parked on a callback has its deadline suspended (NULL), and callback-timeout rescue owns it.
CREATE OR REPLACE FUNCTION ${schema}.rescue_deadlines(p_budget int, p_window int, p_dlq boolean)
RETURNS TABLE (job_id bigint, run_lease bigint, disposition text)
LANGUAGE plpgsql VOLATILE SET plan_cache_mode = force_custom_plan AS $$
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
                        IF r.st = 'applied' THEN
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
                             OR EXISTS (SELECT 1 FROM %1$s.%3$I e WHERE e.claim_slot = $6 AND e.job_id = w.job_id
                                           AND e.run_lease = w.run_lease)) AS closed,
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
                      p_window, v_slot
        LOOP
            IF NOT b.closed AND (b.lease_state IS NULL OR (b.lease_state = 'running' AND b.lease_deadline_at < v_now)) THEN
                EXIT WHEN v_budget <= 0;
                EXIT WHEN NOT pg_try_advisory_xact_lock(${schema}.attempt_lock_key(b.job_id, b.run_lease));
                SELECT cc.status AS st, cc.disposition AS disp INTO r
                  FROM ${schema}.close_attempts(ARRAY[v_slot], ARRAY[0::bigint], ARRAY[0], ARRAY[b.job_id],
                                                ARRAY[b.run_lease], ARRAY[b.receipt_id], ARRAY['deadline'],
                                                ARRAY[NULL::bigint], ARRAY['hard deadline exceeded'], ARRAY[p_dlq],
                                                ARRAY[b.lease_state IS NOT NULL]) cc;
                IF r.st = 'applied' THEN
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

-- Lease-side rescue (docs/design/delivery-contract.md), one pass: running leases whose newest heartbeat evidence
-- (attempt_state or the lease's own, whichever is newer) is older than the cutoff, and parked leases whose callback
-- timed out. Candidates are try-locked (a completion in flight wins), re-read in a new statement under the locks
-- (a resolution that committed meanwhile takes the attempt out of the set), then closed through close_attempts in
-- the claim's shape (the lease is deleted there) and routed to retry, or failure/DLQ when exhausted. Workers are
-- told through the cancel channel. Cutoffs use the database clock.
CREATE OR REPLACE FUNCTION ${schema}.rescue_leases(p_stale_secs double precision, p_budget int, p_dlq boolean)
RETURNS TABLE (job_id bigint, run_lease bigint, disposition text)
LANGUAGE plpgsql VOLATILE SET plan_cache_mode = force_custom_plan AS $$
#variable_conflict use_column
DECLARE
    v_locked record;
    v_c      record;
    v_cnt    int;
    r        record;
BEGIN
    SELECT coalesce(array_agg(x.job_id), '{}') AS jids, coalesce(array_agg(x.run_lease), '{}') AS rls INTO v_locked
      FROM (SELECT l.job_id, l.run_lease
              FROM ${schema}.leases l
              LEFT JOIN ${schema}.attempt_state a ON a.job_id = l.job_id AND a.run_lease = l.run_lease
             WHERE (l.state = 'running'
                    AND greatest(a.heartbeat_at, l.heartbeat_at) < clock_timestamp() - make_interval(secs => p_stale_secs))
                OR (l.state = 'waiting_external' AND l.callback_timeout_at < clock_timestamp())
             ORDER BY coalesce(l.callback_timeout_at, greatest(a.heartbeat_at, l.heartbeat_at))
             LIMIT p_budget) x
     WHERE pg_try_advisory_xact_lock(${schema}.attempt_lock_key(x.job_id, x.run_lease));
    IF cardinality(v_locked.jids) = 0 THEN
        RETURN;
    END IF;

    SELECT array_agg(l.claim_slot) AS slots, array_agg(l.batch_id) AS bids, array_agg(l.batch_index) AS idxs,
           array_agg(l.job_id) AS jids, array_agg(l.run_lease) AS rls, array_agg(l.receipt_id) AS rids,
           array_agg(CASE WHEN l.state = 'waiting_external' THEN 'callback_timeout' ELSE 'rescue' END) AS exits,
           array_agg(CASE WHEN l.state = 'waiting_external' THEN 'callback timed out'
                          ELSE 'heartbeat stale: worker presumed dead' END) AS errs
      INTO v_c
      FROM ${schema}.leases l
      JOIN unnest(v_locked.jids, v_locked.rls) AS k(jid, rl) ON l.job_id = k.jid AND l.run_lease = k.rl
      LEFT JOIN ${schema}.attempt_state a ON a.job_id = l.job_id AND a.run_lease = l.run_lease
     WHERE (l.state = 'running'
            AND greatest(a.heartbeat_at, l.heartbeat_at) < clock_timestamp() - make_interval(secs => p_stale_secs))
        OR (l.state = 'waiting_external' AND l.callback_timeout_at < clock_timestamp());
    v_cnt := coalesce(cardinality(v_c.jids), 0);
    IF v_cnt = 0 THEN
        RETURN;
    END IF;

    FOR r IN
        SELECT cc.job_id AS jid, cc.run_lease AS rl, cc.status AS st, cc.disposition AS disp
          FROM ${schema}.close_attempts(v_c.slots, v_c.bids, v_c.idxs, v_c.jids, v_c.rls, v_c.rids, v_c.exits,
                                        array_fill(NULL::bigint, ARRAY[v_cnt]), v_c.errs,
                                        array_fill(p_dlq, ARRAY[v_cnt]), array_fill(true, ARRAY[v_cnt])) cc
    LOOP
        IF r.st = 'applied' THEN
            job_id := r.jid;
            run_lease := r.rl;
            disposition := r.disp;
            RETURN NEXT;
        END IF;
    END LOOP;
END
$$;
