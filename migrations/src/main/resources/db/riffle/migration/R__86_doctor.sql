-- The proof doctor (docs/operations.md#proof-doctor, docs/adr/0013): the storage invariants checked on a live schema,
-- and what blocks each ring's next prune. Read-only, and bounded for an operator to run beside live traffic.
-- Repeatable migration (docs/adr/0007): functions only, each as CREATE OR REPLACE, re-applied by Flyway
-- whenever this file changes. Tables, types and indexes live in the versioned V__ files; a function whose
-- signature changes is dropped there first.
--
-- The decisions are not made here a second time: whether a claim slot balances is claim_slot_balanced, what blocks a
-- queue slot is queue_slot_blocker, which ready rows are pending is queue_slot_pending_ready, occupancy and the
-- sealed-slot arithmetic are ring_slot_occupied, ring_slot_busy and ring_cursor (R__60_ring.sql). The doctor adds
-- only the names (which attempts, which rows) and the checks no hot path needs to make.

-- The ring families that take INSERTs only (docs/design/storage-planes.md, reclaim classes): every family of the queue
-- and claim rings but lease_claims (its closed_at and materialized_at are updated by the cold close and materialize
-- paths). The lease ring's leases are mutable by design.
CREATE OR REPLACE FUNCTION ${schema}.append_only_families() RETURNS text[]
LANGUAGE sql IMMUTABLE AS $$
    SELECT ${schema}.ring_families('queue')
           || array_remove(${schema}.ring_families('claim'), 'lease_claims')
$$;

-- The generation ring slot p_slot holds in its current lap, from the cursor: g_cur - ((slot_cur - slot) mod n).
-- Negative for a slot the ring has not entered yet, which must hold no rows at all.
CREATE OR REPLACE FUNCTION ${schema}.ring_slot_generation(p_ring text, p_slot int) RETURNS bigint
LANGUAGE sql STABLE AS $$
    SELECT c.generation - (((c.slot - p_slot) % n.n + n.n) % n.n)
      FROM ${schema}.ring_cursor(p_ring) c CROSS JOIN (SELECT ${schema}.ring_slot_count(p_ring) AS n) n
$$;

-- The open attempts of claim slot p_claim_slot (claims without closure evidence, compact items and row-local claims
-- alike), optionally only those whose claim references ready slot p_ready_slot, ordered by job id, at most p_limit
-- (NULL: all). batch_id 0 marks a row-local claim. STABLE, so it reads with the snapshot of the statement that calls
-- it: the doctor counts claims, closures and open attempts of a slot in one statement, one snapshot.
CREATE OR REPLACE FUNCTION ${schema}.claim_slot_open_attempts(p_claim_slot int, p_ready_slot int, p_limit int)
RETURNS TABLE (job_id bigint, run_lease bigint, batch_id bigint)
LANGUAGE plpgsql STABLE AS $$
BEGIN
    RETURN QUERY EXECUTE format($q$
        SELECT o.job_id, o.run_lease, o.batch_id FROM (
            SELECT b.job_ids[i] AS job_id, b.run_leases[i] AS run_lease, b.batch_id
              FROM %1$s.%2$I b CROSS JOIN LATERAL generate_subscripts(b.receipt_ids, 1) i
             WHERE ($1::int IS NULL OR b.ready_slot = $1)
               AND NOT EXISTS (SELECT 1 FROM %1$s.%3$I x WHERE x.receipt_ranges @> b.receipt_ids[i])
            UNION ALL
            SELECT c.job_id, c.run_lease, 0::bigint
              FROM %1$s.%4$I c
             WHERE ($1::int IS NULL OR c.ready_slot = $1)
               AND NOT EXISTS (SELECT 1 FROM %1$s.%5$I x WHERE x.job_id = c.job_id AND x.run_lease = c.run_lease)
               AND NOT EXISTS (SELECT 1 FROM %1$s.%3$I x WHERE x.receipt_ranges @> c.receipt_id)) o
         ORDER BY o.job_id, o.run_lease
         LIMIT $2
        $q$, '${schema}', 'lease_claim_batches_' || p_claim_slot, 'lease_claim_closure_batches_' || p_claim_slot,
             'lease_claims_' || p_claim_slot, 'lease_claim_closures_' || p_claim_slot)
       USING p_ready_slot, p_limit;
END
$$;

-- The doctor. One row per finding:
--   section 'violation'    check_name names the broken invariant (claim_balance, orphan_closure, double_closure,
--                          generation, ring_cursor, rescue_cursor, lane_cursor, append_only); ring and slot where it
--                          applies; detail says what was found.
--   section 'open_attempt' an open attempt of claim slot `slot` (job_id, run_lease), at most p_limit per slot; detail
--                          says how many the slot has in all.
--   section 'prune'        one per ring: `slot` is the slot its next prune targets (the one rotation needs next);
--                          check_name is 'empty' (nothing to truncate), 'prunable', or what blocks it: the prune
--                          outcome word (open_claims, pending_ready, unclosed_claims, active_leases, lease_active,
--                          retention) or lock_held (a transaction holds a lock on the slot's children, so prune would
--                          answer blocked); detail says why.
--   section 'blocked_by'   what the blocker of ring `ring` consists of, at most p_limit rows: the open attempts, the
--                          pending ready rows (job_id, the run_lease of its previous attempt) or the leases.
-- p_history_secs and p_failed_retention_secs are the maintenance settings prune runs with (0: no history floor).
-- The statement's transaction is made read-only first, so no check can write, and the doctor gives up on a lock it
-- cannot have within lock_timeout rather than queue behind a prune's exclusive lock for long. Cost: one pass over
-- the claim ring and over the queue and lease rings' children (the generation check), index probes otherwise.
CREATE OR REPLACE FUNCTION ${schema}.doctor(p_history_secs int, p_failed_retention_secs int, p_limit int)
RETURNS TABLE (section text, check_name text, ring text, slot int, detail text, job_id bigint, run_lease bigint)
LANGUAGE plpgsql VOLATILE SET lock_timeout = '5s' SET plan_cache_mode = force_custom_plan AS $$
#variable_conflict use_column
DECLARE
    v_ring   text;
    v_fam    text;
    v_col    text;
    v_n      int;
    v_slot   int;
    v_gen    bigint;
    v_cur    record;
    v_rec    record;
    v_target int;
    v_reason text;
    v_claims bigint;
    v_closed bigint;
    v_open   bigint;
    v_b      boolean;
    v_txt    text;
    v_m      int8multirange;
    v_x      bigint;
    v_y      bigint;
BEGIN
    IF p_limit IS NULL OR p_limit < 1 THEN
        RAISE EXCEPTION 'doctor: p_limit must be positive, got %', p_limit USING ERRCODE = '22023';
    END IF;
    PERFORM set_config('transaction_read_only', 'on', true);

    -- Ring cursors: the ledger's current row names slot generation mod n, and the slot table has rows 0 .. n-1.
    FOREACH v_ring IN ARRAY ARRAY['queue', 'lease', 'claim'] LOOP
        v_n := ${schema}.ring_slot_count(v_ring);
        SELECT * INTO v_cur FROM ${schema}.ring_cursor(v_ring);
        IF v_cur.slot IS DISTINCT FROM (v_cur.generation % v_n)::int THEN
            RETURN QUERY SELECT 'violation', 'ring_cursor', v_ring, v_cur.slot,
                format('the rotation ledger''s current row is generation %s at slot %s; generation mod %s is %s',
                       v_cur.generation, v_cur.slot, v_n, v_cur.generation % v_n), NULL::bigint, NULL::bigint;
        END IF;
        EXECUTE format('SELECT count(*), min(slot), max(slot) FROM %s.%I', '${schema}', v_ring || '_ring_slots')
           INTO v_x, v_y, v_open;
        IF v_x <> v_n OR v_y <> 0 OR v_open <> v_n - 1 THEN
            RETURN QUERY SELECT 'violation', 'ring_cursor', v_ring, NULL::int,
                format('%s_ring_slots has %s rows (slots %s..%s); the ring has %s slots', v_ring, v_x, v_y, v_open, v_n),
                NULL::bigint, NULL::bigint;
        END IF;
    END LOOP;

    -- Generations: every row of a slot belongs to the generation the slot holds in its current lap; a slot the ring
    -- has not entered holds nothing. The claim ring's rows carry no generation: only the second half applies.
    FOREACH v_ring IN ARRAY ARRAY['queue', 'lease', 'claim'] LOOP
        v_n := ${schema}.ring_slot_count(v_ring);
        v_col := CASE v_ring WHEN 'queue' THEN 'ready_generation' WHEN 'lease' THEN 'lease_generation' END;
        FOR v_slot IN 0 .. v_n - 1 LOOP
            FOREACH v_fam IN ARRAY ${schema}.ring_families(v_ring) LOOP
                -- The cursor and the child are read in one statement (one snapshot): a rotation that re-enters the
                -- slot between two statements would otherwise make its new rows look foreign. ring_cursor is
                -- STABLE, so it reads with the statement's snapshot.
                EXECUTE format('SELECT c.g, %3$s, c.g < 0 AND EXISTS (SELECT 1 FROM %1$s.%2$I)'
                               '  FROM (SELECT %1$s.ring_slot_generation($1, $2) AS g) c',
                               '${schema}', v_fam || '_' || v_slot,
                               CASE WHEN v_col IS NULL THEN 'NULL::bigint'
                                    ELSE format('(SELECT x.%1$I FROM %2$s.%3$I x WHERE x.%1$I <> c.g LIMIT 1)',
                                                v_col, '${schema}', v_fam || '_' || v_slot) END)
                   INTO v_gen, v_x, v_b USING v_ring, v_slot;
                IF v_b THEN
                    RETURN QUERY SELECT 'violation', 'generation', v_ring, v_slot,
                        format('%s_%s holds rows, but the ring has not entered slot %s yet', v_fam, v_slot, v_slot),
                        NULL::bigint, NULL::bigint;
                ELSIF v_x IS NOT NULL THEN
                    RETURN QUERY SELECT 'violation', 'generation', v_ring, v_slot,
                        format('%s_%s holds rows of generation %s; the slot is at generation %s',
                               v_fam, v_slot, v_x, v_gen), NULL::bigint, NULL::bigint;
                END IF;
            END LOOP;
        END LOOP;
    END LOOP;

    -- Receipt plane, per claim slot: the open attempts by name; claims - closures = open (claim_slot_balanced is
    -- the prune's quick form of it); every closure closes a claim of the slot, and none twice.
    v_n := ${schema}.ring_slot_count('claim');
    FOR v_slot IN 0 .. v_n - 1 LOOP
        -- One statement, one snapshot: claims, closures and open attempts of the slot. It also takes the slot's
        -- children in ACCESS SHARE until the doctor's transaction ends, so no prune truncates the slot (and resets its
        -- cursors) between this statement and the ones below.
        EXECUTE format('SELECT (SELECT count(*) FROM %1$s.%2$I) + (SELECT coalesce(sum(claimed_count), 0) FROM %1$s.%3$I),'
                       '       (SELECT count(*) FROM %1$s.%4$I) + (SELECT coalesce(sum(closed_count), 0) FROM %1$s.%5$I),'
                       '       (SELECT count(*) FROM %1$s.claim_slot_open_attempts($1, NULL, NULL))',
                       '${schema}', 'lease_claims_' || v_slot, 'lease_claim_batches_' || v_slot,
                       'lease_claim_closures_' || v_slot, 'lease_claim_closure_batches_' || v_slot)
           INTO v_claims, v_closed, v_open USING v_slot;
        IF v_open > 0 THEN
            RETURN QUERY SELECT 'open_attempt', NULL::text, 'claim', v_slot,
                format('%s open attempt(s) in claim slot %s', v_open, v_slot), o.job_id, o.run_lease
              FROM ${schema}.claim_slot_open_attempts(v_slot, NULL, p_limit) o;
        END IF;
        IF v_claims - v_closed <> v_open THEN
            RETURN QUERY SELECT 'violation', 'claim_balance', 'claim', v_slot,
                format('claim slot %s has %s claims and %s closures but %s open attempts: %s closure(s) match no open claim',
                       v_slot, v_claims, v_closed, v_open, v_closed - (v_claims - v_open)), NULL::bigint, NULL::bigint;
        END IF;
        -- Compact closures against every receipt the slot claimed (range algebra, one pass each).
        EXECUTE format($q$
            WITH claimed AS (
                SELECT coalesce(range_agg(m), '{}'::int8multirange) AS m FROM (
                    SELECT receipt_ranges AS m FROM %1$s.%2$I
                    UNION ALL
                    SELECT int8multirange(int8range(receipt_id, receipt_id + 1)) FROM %1$s.%3$I) x),
            closed AS (
                SELECT coalesce(range_agg(receipt_ranges), '{}'::int8multirange) AS m,
                       coalesce(sum(closed_count), 0) AS n FROM %1$s.%4$I)
            SELECT closed.m - claimed.m,
                   closed.n - coalesce((SELECT sum(upper(r) - lower(r)) FROM unnest(closed.m) r), 0)
              FROM claimed, closed
            $q$, '${schema}', 'lease_claim_batches_' || v_slot, 'lease_claims_' || v_slot,
                 'lease_claim_closure_batches_' || v_slot)
           INTO v_m, v_x;
        IF NOT isempty(v_m) THEN
            RETURN QUERY SELECT 'violation', 'orphan_closure', 'claim', v_slot,
                format('closure batches of claim slot %s close receipts no claim of the slot holds: %s',
                       v_slot, left(v_m::text, 200)), NULL::bigint, NULL::bigint;
        END IF;
        IF v_x > 0 THEN
            RETURN QUERY SELECT 'violation', 'double_closure', 'claim', v_slot,
                format('closure batches of claim slot %s close %s receipt(s) more than once', v_slot, v_x),
                NULL::bigint, NULL::bigint;
        END IF;
        -- Explicit closures (row-local claims only): each names a row-local claim that has no closure batch too.
        EXECUTE format($q$
            SELECT (SELECT count(*) FROM %1$s.%2$I x
                     WHERE NOT EXISTS (SELECT 1 FROM %1$s.%3$I c WHERE c.job_id = x.job_id AND c.run_lease = x.run_lease)),
                   (SELECT count(*) FROM %1$s.%2$I x JOIN %1$s.%3$I c ON c.job_id = x.job_id AND c.run_lease = x.run_lease
                     WHERE EXISTS (SELECT 1 FROM %1$s.%4$I b WHERE b.receipt_ranges @> c.receipt_id))
            $q$, '${schema}', 'lease_claim_closures_' || v_slot, 'lease_claims_' || v_slot,
                 'lease_claim_closure_batches_' || v_slot)
           INTO v_x, v_y;
        IF v_x > 0 THEN
            RETURN QUERY SELECT 'violation', 'orphan_closure', 'claim', v_slot,
                format('lease_claim_closures_%s has %s row(s) without a row-local claim', v_slot, v_x),
                NULL::bigint, NULL::bigint;
        END IF;
        IF v_y > 0 THEN
            RETURN QUERY SELECT 'violation', 'double_closure', 'claim', v_slot,
                format('%s row-local claim(s) of claim slot %s are closed both explicitly and by a closure batch',
                       v_y, v_slot), NULL::bigint, NULL::bigint;
        END IF;

        -- Rescue cursors (read after the statement above locked the slot, so no prune resets them under us; rescue
        -- only moves them to claims the slot holds): each names a position of a claim in the slot, never a
        -- time in the future.
        SELECT * INTO v_rec FROM ${schema}.claim_ring_slots s WHERE s.slot = v_slot;
        IF v_rec.rescue_cursor_claimed_at > clock_timestamp()
           OR v_rec.deadline_cursor_deadline_at > clock_timestamp()
           OR v_rec.batch_deadline_cursor_deadline_at > clock_timestamp() THEN
            RETURN QUERY SELECT 'violation', 'rescue_cursor', 'claim', v_slot,
                format('a rescue cursor of claim slot %s is in the future (stale %s, deadline %s, batch deadline %s)',
                       v_slot, v_rec.rescue_cursor_claimed_at, v_rec.deadline_cursor_deadline_at,
                       v_rec.batch_deadline_cursor_deadline_at), NULL::bigint, NULL::bigint;
        END IF;
        IF v_rec.rescue_cursor_claimed_at <> '-infinity' THEN
            EXECUTE format('SELECT EXISTS (SELECT 1 FROM %1$s.%2$I WHERE claimed_at >= $1)'
                           '    OR EXISTS (SELECT 1 FROM %1$s.%3$I WHERE claimed_at >= $1)',
                           '${schema}', 'lease_claim_batches_' || v_slot, 'lease_claims_' || v_slot)
               INTO v_b USING v_rec.rescue_cursor_claimed_at;
            IF NOT v_b THEN
                RETURN QUERY SELECT 'violation', 'rescue_cursor', 'claim', v_slot,
                    format('the stale-rescue cursor of claim slot %s (%s, job %s) is past every claim in the slot',
                           v_slot, v_rec.rescue_cursor_claimed_at, v_rec.rescue_cursor_job_id), NULL::bigint, NULL::bigint;
            END IF;
        END IF;
        IF v_rec.batch_deadline_cursor_batch_id <> 0 THEN
            EXECUTE format('SELECT EXISTS (SELECT 1 FROM %s.%I WHERE batch_id = $1)', '${schema}',
                           'lease_claim_batches_' || v_slot)
               INTO v_b USING v_rec.batch_deadline_cursor_batch_id;
            IF NOT v_b THEN
                RETURN QUERY SELECT 'violation', 'rescue_cursor', 'claim', v_slot,
                    format('the deadline cursor of claim slot %s names claim batch %s, which the slot does not hold',
                           v_slot, v_rec.batch_deadline_cursor_batch_id), NULL::bigint, NULL::bigint;
            END IF;
        END IF;
        IF v_rec.deadline_cursor_job_id <> 0 THEN
            EXECUTE format('SELECT EXISTS (SELECT 1 FROM %s.%I WHERE job_id = $1 AND run_lease = $2)', '${schema}',
                           'lease_claims_' || v_slot)
               INTO v_b USING v_rec.deadline_cursor_job_id, v_rec.deadline_cursor_run_lease;
            IF NOT v_b THEN
                RETURN QUERY SELECT 'violation', 'rescue_cursor', 'claim', v_slot,
                    format('the row-local deadline cursor of claim slot %s names attempt (%s, %s), which the slot does not hold',
                           v_slot, v_rec.deadline_cursor_job_id, v_rec.deadline_cursor_run_lease), NULL::bigint, NULL::bigint;
            END IF;
        END IF;
    END LOOP;

    -- Lanes: every lane has both heads, and its claim cursor is never past its enqueue head. Sequences are not
    -- transactional: the claim cursor is read before the enqueue head (left to right), and the head only grows, so a
    -- claim racing the doctor cannot make the cursor look past it.
    RETURN QUERY
        SELECT 'violation', 'lane_cursor', 'queue', NULL::int,
               CASE WHEN l.cseq IS NULL OR l.eseq IS NULL
                    THEN format('lane (%s, %s, %s) has only its %s head', l.queue, l.priority, l.enqueue_shard,
                                CASE WHEN l.cseq IS NULL THEN 'enqueue' ELSE 'claim' END)
                    ELSE format('lane (%s, %s, %s): claim cursor %s is past the enqueue head %s',
                                l.queue, l.priority, l.enqueue_shard, l.cnext, l.enext) END,
               NULL::bigint, NULL::bigint
          FROM (SELECT coalesce(c.queue, e.queue) AS queue, coalesce(c.priority, e.priority) AS priority,
                       coalesce(c.enqueue_shard, e.enqueue_shard) AS enqueue_shard, c.seq_name AS cseq, e.seq_name AS eseq,
                       CASE WHEN c.seq_name IS NOT NULL THEN ${schema}.seq_next(c.seq_name) END AS cnext,
                       CASE WHEN e.seq_name IS NOT NULL THEN ${schema}.seq_next(e.seq_name) END AS enext
                  FROM ${schema}.queue_claim_heads c
                  FULL JOIN ${schema}.queue_enqueue_heads e
                    ON e.queue = c.queue AND e.priority = c.priority AND e.enqueue_shard = c.enqueue_shard) l
         WHERE l.cseq IS NULL OR l.eseq IS NULL OR l.cnext > l.enext
         ORDER BY 5;

    -- Append-only families: no child was ever updated or deleted from (cumulative statistics, since they were last
    -- reset; TRUNCATE does not count).
    RETURN QUERY
        SELECT 'violation', 'append_only', NULL::text, NULL::int,
               format('%s has %s update(s) and %s delete(s) since its statistics were reset; the family takes INSERTs only',
                      t.relname, t.n_tup_upd, t.n_tup_del), NULL::bigint, NULL::bigint
          FROM pg_catalog.pg_stat_user_tables t
         WHERE t.schemaname = '${schema_name}' AND (t.n_tup_upd > 0 OR t.n_tup_del > 0)
           AND t.relname ~ ('^(' || array_to_string(${schema}.append_only_families(), '|') || ')_[0-9]+$')
         ORDER BY t.relname;

    -- What blocks each ring's next prune: the same gates, in the same order, prune_ring applies.
    FOREACH v_ring IN ARRAY ARRAY['queue', 'lease', 'claim'] LOOP
        v_n := ${schema}.ring_slot_count(v_ring);
        SELECT * INTO v_cur FROM ${schema}.ring_cursor(v_ring);
        v_target := (v_cur.slot + 1) % v_n;
        v_reason := NULL;
        v_txt := NULL;
        IF v_ring = 'lease' THEN
            IF ${schema}.ring_slot_busy('lease', v_target) THEN
                v_reason := 'lease_active';
                v_txt := format('lease slot %s holds live leases', v_target);
                RETURN QUERY SELECT 'blocked_by', NULL::text, v_ring, v_target, 'lease', l.job_id, l.run_lease
                  FROM ${schema}.leases l WHERE l.lease_slot = v_target ORDER BY l.job_id LIMIT p_limit;
            ELSIF pg_relation_size(format('%s.%I', '${schema}', 'leases_' || v_target)::regclass) = 0 THEN
                v_reason := 'empty';
            END IF;
        ELSIF NOT ${schema}.ring_slot_occupied(v_ring, v_target) THEN
            v_reason := 'empty';
        ELSIF v_ring = 'claim' THEN
            IF NOT ${schema}.claim_slot_balanced(v_target) THEN
                v_reason := 'open_claims';
                SELECT count(*) INTO v_open FROM ${schema}.claim_slot_open_attempts(v_target, NULL, NULL);
                v_txt := format('claim slot %s has %s open attempt(s)%s', v_target, v_open,
                                CASE WHEN v_open = 0 THEN ' and its claims and closures do not balance (see claim_balance)'
                                     ELSE ': they close when they finish, or when rescue finds them stale' END);
                RETURN QUERY SELECT 'blocked_by', NULL::text, v_ring, v_target, 'open attempt', o.job_id, o.run_lease
                  FROM ${schema}.claim_slot_open_attempts(v_target, NULL, p_limit) o;
            END IF;
        ELSE
            v_reason := ${schema}.queue_slot_blocker(v_target);
            IF v_reason = 'active_leases' THEN
                v_txt := format('materialized leases reference queue slot %s', v_target);
                RETURN QUERY SELECT 'blocked_by', NULL::text, v_ring, v_target, 'lease', l.job_id, l.run_lease
                  FROM ${schema}.leases l WHERE l.ready_slot = v_target ORDER BY l.job_id LIMIT p_limit;
            ELSIF v_reason = 'pending_ready' THEN
                v_txt := format('queue slot %s holds ready jobs not claimed yet', v_target);
                RETURN QUERY SELECT 'blocked_by', NULL::text, v_ring, v_target,
                       format('ready (%s, %s, %s) #%s', p.queue, p.priority, p.enqueue_shard, p.lane_seq),
                       p.job_id, p.run_lease
                  FROM ${schema}.queue_slot_pending_ready(v_target, p_limit) p;
            ELSIF v_reason = 'unclosed_claims' THEN
                v_txt := format('attempts claimed from queue slot %s are still open', v_target);
                RETURN QUERY SELECT 'blocked_by', NULL::text, v_ring, v_target, 'open attempt', o.job_id, o.run_lease
                  FROM generate_series(0, ${schema}.ring_slot_count('claim') - 1) s
                 CROSS JOIN LATERAL ${schema}.claim_slot_open_attempts(s, v_target, p_limit) o
                 LIMIT p_limit;
            ELSIF v_reason IS NULL AND p_history_secs > 0
                  AND ${schema}.queue_slot_retained(v_target, p_history_secs, p_failed_retention_secs) THEN
                v_reason := 'retention';
                v_txt := format('queue slot %s holds terminal history younger than the history retention (%s s)',
                                v_target, p_history_secs);
            END IF;
        END IF;
        IF v_reason IS NULL THEN
            -- The proofs pass: prune goes ahead unless a transaction holds a lock on the slot's children that its
            -- ACCESS EXCLUSIVE would wait for (a producer open across a lap, docs/adr/0005). Brief holders of the
            -- hot path are not named: only transactions open for a second or more.
            SELECT format('pid %s (%s, %s) holds %s on %s, in a transaction open since %s',
                          l.pid, coalesce(nullif(a.application_name, ''), 'no application_name'), a.state, l.mode,
                          c.relname, a.xact_start)
              INTO v_txt
              FROM pg_catalog.pg_locks l
              JOIN pg_catalog.pg_class c ON c.oid = l.relation
              JOIN pg_catalog.pg_stat_activity a ON a.pid = l.pid
             WHERE l.locktype = 'relation' AND l.granted AND l.pid <> pg_backend_pid()
               AND l.database = (SELECT oid FROM pg_catalog.pg_database WHERE datname = current_database())
               AND c.relnamespace = '${schema_name}'::regnamespace
               AND c.relname = ANY (SELECT f || '_' || v_target FROM unnest(${schema}.ring_families(v_ring)) f)
               AND a.xact_start < clock_timestamp() - interval '1 second'
             ORDER BY a.xact_start
             LIMIT 1;
            v_reason := CASE WHEN v_txt IS NULL THEN 'prunable' ELSE 'lock_held' END;
        END IF;
        RETURN QUERY SELECT 'prune', v_reason, v_ring, v_target,
            coalesce(v_txt, CASE v_reason
                WHEN 'empty' THEN format('%s slot %s holds nothing to truncate', v_ring, v_target)
                ELSE format('%s slot %s is inert: the next prune truncates it', v_ring, v_target) END),
            NULL::bigint, NULL::bigint;
    END LOOP;
END
$$;
