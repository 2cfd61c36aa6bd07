-- Hot-path functions (DESIGN.md §5). Each is called as ONE autocommit statement, so a claim or a completion
-- batch is one round trip and one commit. Functions run at READ COMMITTED and, being VOLATILE plpgsql, take a new
-- snapshot per statement: that is what makes "lock in one statement, look in the next" work (DESIGN.md preface 6).
-- Slot-specific statements address the child partition by name through EXECUTE (planned on one small table, and
-- never touching sibling children that a prune may be truncating: DESIGN.md §12 item 11, STACK.md §5). The other
-- statements run with cached generic plans; planning them per call with 16 partitions cost more than the work.

-- The one derivation of the per-attempt advisory lock key. Completion, close, cancel, rescue, materialization and
-- tests all call this function; nothing computes the key elsewhere.
CREATE FUNCTION ${schema}.attempt_lock_key(p_job_id bigint, p_run_lease bigint) RETURNS bigint
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    -- Explicit ::text casts keep every step immutable, so the planner inlines this into the caller's query.
    SELECT hashtextextended('${schema_name}.attempt:' || p_job_id::text || ':' || p_run_lease::text, 0)
$$;

-- Takes the per-attempt advisory xact locks of a set of attempts, deduplicated and in key order (so two callers
-- locking overlapping sets cannot deadlock). Callers check and write in a LATER statement, which then sees every
-- competing holder's commit (DESIGN.md preface item 6).
CREATE FUNCTION ${schema}.lock_attempts(p_job_ids bigint[], p_run_leases bigint[]) RETURNS void
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    PERFORM pg_advisory_xact_lock(k)
       FROM (SELECT DISTINCT ${schema}.attempt_lock_key(x.j, x.r) AS k
               FROM unnest(p_job_ids, p_run_leases) AS x(j, r)
              ORDER BY 1) keys;
END
$$;

-- Next value a lane sequence would hand out, without consuming it. Sequences here are never set with
-- is_called = false except back to 1, so a NULL last value means "next is 1".
CREATE FUNCTION ${schema}.seq_next(p_seq text) RETURNS bigint
LANGUAGE sql VOLATILE AS $$
    SELECT coalesce(pg_sequence_last_value(('${schema}.' || quote_ident(p_seq))::regclass) + 1, 1)
$$;

-- Move a claim cursor forward to at least p_next; never backwards. Callers serialize per lane by holding the
-- lane's claim head row lock.
CREATE FUNCTION ${schema}.set_seq_next(p_seq text, p_next bigint) RETURNS bigint
LANGUAGE plpgsql VOLATILE SET plan_cache_mode = force_generic_plan AS $$
DECLARE
    v_cur bigint := ${schema}.seq_next(p_seq);
BEGIN
    IF p_next > v_cur THEN
        PERFORM setval(('${schema}.' || quote_ident(p_seq))::regclass, p_next - 1, true);
        RETURN p_next;
    END IF;
    RETURN v_cur;
END
$$;

-- Create a lane (registry row, both heads, both sequences) if absent. Serialized per lane by an advisory xact
-- lock; the sequences are created in the caller's transaction, so a rolled-back creator leaves nothing behind.
CREATE FUNCTION ${schema}.ensure_lane(p_queue text, p_priority smallint, p_shard smallint) RETURNS text
LANGUAGE plpgsql VOLATILE SET plan_cache_mode = force_generic_plan AS $$
DECLARE
    v_enq   text;
    v_claim text;
    v_hash  text;
BEGIN
    SELECT seq_name INTO v_enq FROM ${schema}.queue_enqueue_heads
     WHERE queue = p_queue AND priority = p_priority AND enqueue_shard = p_shard;
    IF FOUND THEN
        RETURN v_enq;
    END IF;
    PERFORM pg_advisory_xact_lock(hashtextextended('${schema_name}.lane:' || p_queue || ':' || p_priority || ':' || p_shard, 0));
    SELECT seq_name INTO v_enq FROM ${schema}.queue_enqueue_heads
     WHERE queue = p_queue AND priority = p_priority AND enqueue_shard = p_shard;
    IF FOUND THEN
        RETURN v_enq;
    END IF;
    v_hash  := md5(p_queue || ':' || p_priority || ':' || p_shard);
    v_enq   := 'lane_e_' || v_hash;
    v_claim := 'lane_c_' || v_hash;
    EXECUTE format('CREATE SEQUENCE IF NOT EXISTS %s.%I MINVALUE 1 START 1 CACHE 1', '${schema}', v_enq);
    EXECUTE format('CREATE SEQUENCE IF NOT EXISTS %s.%I MINVALUE 1 START 1 CACHE 1', '${schema}', v_claim);
    INSERT INTO ${schema}.queue_meta (queue) VALUES (p_queue) ON CONFLICT DO NOTHING;
    INSERT INTO ${schema}.queue_lanes (queue, priority) VALUES (p_queue, p_priority) ON CONFLICT DO NOTHING;
    INSERT INTO ${schema}.queue_enqueue_heads (queue, priority, enqueue_shard, seq_name)
         VALUES (p_queue, p_priority, p_shard, v_enq);
    INSERT INTO ${schema}.queue_claim_heads (queue, priority, enqueue_shard, seq_name)
         VALUES (p_queue, p_priority, p_shard, v_claim);
    RETURN v_enq;
END
$$;

-- Reserve p_n consecutive lane positions. The advisory lock is held until the caller's transaction ends: within a
-- lane, position N+1 can only become visible after position N committed or aborted (DESIGN.md §12 item 2).
CREATE FUNCTION ${schema}.reserve_lane(p_queue text, p_priority smallint, p_shard smallint, p_n bigint) RETURNS bigint
LANGUAGE plpgsql VOLATILE SET plan_cache_mode = force_generic_plan AS $$
DECLARE
    v_seq   text := ${schema}.ensure_lane(p_queue, p_priority, p_shard);
    v_first bigint;
BEGIN
    PERFORM pg_advisory_xact_lock(hashtextextended('${schema_name}.' || v_seq, 0));
    v_first := nextval(('${schema}.' || quote_ident(v_seq))::regclass);
    IF p_n > 1 THEN
        PERFORM setval(('${schema}.' || quote_ident(v_seq))::regclass, v_first + p_n - 1, true);
    END IF;
    RETURN v_first;
END
$$;

-- Take a lane's reservation lock (the same key reserve_lane takes) for promotion, DLQ retry and release, which must
-- not queue behind a producer transaction left open on that lane: it would hold them, and every lane they serve
-- after it, for as long as it stays open. The lock is tried first; if it is held, a bounded wait (lock_timeout,
-- set for this function only) lets short holders (autocommit enqueues, other closers) finish, and then the caller
-- is told false and must leave that lane's jobs where they are. A lane that does not exist yet is created here
-- under the same bound (its creation lock and the queue_meta insert can wait on an uncommitted creator). When this
-- returns true the caller's reserve_lane on that lane re-enters the lock without waiting; the lock is still held to
-- the caller's commit, so the ordering of positions within the lane is unchanged.
CREATE FUNCTION ${schema}.try_lock_lane(p_queue text, p_priority smallint, p_shard smallint) RETURNS boolean
LANGUAGE plpgsql VOLATILE SET lock_timeout = '50ms' SET plan_cache_mode = force_generic_plan AS $$
DECLARE
    v_seq text;
BEGIN
    SELECT seq_name INTO v_seq FROM ${schema}.queue_enqueue_heads
     WHERE queue = p_queue AND priority = p_priority AND enqueue_shard = p_shard;
    IF FOUND AND pg_try_advisory_xact_lock(hashtextextended('${schema_name}.' || v_seq, 0)) THEN
        RETURN true;
    END IF;
    -- Contended or new lane only: the subtransaction is not paid by the common case above.
    BEGIN
        v_seq := ${schema}.ensure_lane(p_queue, p_priority, p_shard);
        PERFORM pg_advisory_xact_lock(hashtextextended('${schema_name}.' || v_seq, 0));
        RETURN true;
    EXCEPTION WHEN lock_not_available THEN
        RETURN false;
    END;
END
$$;

-- Append runnable rows to the queue ring (DESIGN.md §5.1.1 steps 5-9): reserve lane positions in a stable
-- (queue, priority) order, read the ring cursor after reserving (so a later reservation never lands in an older
-- generation), insert the ready rows and one segment per lane, and NOTIFY (delivered on commit, dropped on
-- rollback). Used by enqueue, promotion and DLQ retry; rows keep their job id, attempt and run_lease.
CREATE FUNCTION ${schema}.append_ready(p_job_ids bigint[], p_queues text[], p_kinds text[], p_args jsonb[],
                                       p_priorities smallint[], p_max_attempts smallint[], p_attempts smallint[],
                                       p_run_leases bigint[], p_payloads jsonb[], p_created_ats timestamptz[],
                                       p_run_ats timestamptz[])
RETURNS int
LANGUAGE plpgsql VOLATILE SET plan_cache_mode = force_generic_plan AS $$
DECLARE
    v_now    timestamptz := now();
    v_slot   int;
    v_gen    bigint;
    v_lanes  text[] := '{}';
    v_prios  smallint[] := '{}';
    v_firsts bigint[] := '{}';
    v_dummy  int;
    l        record;
BEGIN
    IF coalesce(cardinality(p_job_ids), 0) = 0 THEN
        RETURN 0;
    END IF;
    FOR l IN
        SELECT x.queue, x.priority, count(*) AS n
          FROM unnest(p_queues, p_priorities) AS x(queue, priority)
         GROUP BY x.queue, x.priority
         ORDER BY x.queue, x.priority
    LOOP
        v_lanes  := v_lanes || l.queue;
        v_prios  := v_prios || l.priority;
        v_firsts := v_firsts || ${schema}.reserve_lane(l.queue, l.priority, 0::smallint, l.n);
    END LOOP;

    SELECT r.slot, r.generation INTO v_slot, v_gen
      FROM ${schema}.queue_ring_rotations r ORDER BY r.generation DESC LIMIT 1;

    WITH input AS (
        SELECT x.*
          FROM unnest(p_job_ids, p_queues, p_kinds, p_args, p_priorities, p_max_attempts, p_attempts, p_run_leases,
                      p_payloads, p_created_ats, p_run_ats)
               WITH ORDINALITY AS x(job_id, queue, kind, args, priority, max_attempts, attempt, run_lease, payload,
                                    created_at, run_at, ord)
    ),
    placed AS (
        SELECT i.*, ln.first + row_number() OVER (PARTITION BY i.queue, i.priority ORDER BY i.ord) - 1 AS lane_seq
          FROM input i
          JOIN unnest(v_lanes, v_prios, v_firsts) AS ln(queue, priority, first)
            ON ln.queue = i.queue AND ln.priority = i.priority
    ),
    ready AS (
        INSERT INTO ${schema}.ready_entries (ready_slot, ready_generation, job_id, kind, queue, args, priority, attempt,
                                             run_lease, max_attempts, lane_seq, enqueue_shard, run_at, created_at,
                                             payload)
        SELECT v_slot, v_gen, p.job_id, p.kind, p.queue, p.args, p.priority, p.attempt, p.run_lease, p.max_attempts,
               p.lane_seq, 0, coalesce(p.run_at, v_now), coalesce(p.created_at, v_now), p.payload
          FROM placed p
    ),
    segs AS (
        INSERT INTO ${schema}.ready_segments (ready_slot, ready_generation, queue, priority, enqueue_shard,
                                              first_lane_seq, next_lane_seq, first_run_at, created_at)
        SELECT v_slot, v_gen, p.queue, p.priority, 0, min(p.lane_seq), max(p.lane_seq) + 1,
               min(coalesce(p.run_at, v_now)), v_now
          FROM placed p
         GROUP BY p.queue, p.priority
    )
    -- Data-modifying CTEs always run to completion, whether or not the outer query reads them.
    SELECT 1 INTO v_dummy;

    PERFORM pg_notify('${schema_name}.ready', q) FROM (SELECT DISTINCT unnest(p_queues) AS q) d;
    RETURN cardinality(p_job_ids);
END
$$;

-- Enqueue a batch in the caller's transaction (DESIGN.md §5.1.1). Arrays are positionally aligned; job ids come
-- back in input order. Rows with run_at in the future go to deferred_jobs (no lane work, no NOTIFY).
CREATE FUNCTION ${schema}.enqueue_jobs(p_queues text[], p_kinds text[], p_args jsonb[], p_priorities smallint[],
                                       p_max_attempts smallint[], p_run_ats timestamptz[])
RETURNS SETOF bigint
LANGUAGE plpgsql VOLATILE SET plan_cache_mode = force_generic_plan AS $$
DECLARE
    v_now timestamptz := now();
    v_ids bigint[];
BEGIN
    SELECT array_agg(nextval('${schema}.job_id_seq') ORDER BY g) INTO v_ids
      FROM generate_series(1, cardinality(p_kinds)) g;

    INSERT INTO ${schema}.deferred_jobs (job_id, kind, queue, args, state, priority, attempt, run_lease,
                                         max_attempts, run_at, created_at)
    SELECT v_ids[x.ord], x.kind, x.queue, x.args, 'scheduled', x.priority, 0, 0, x.max_attempts, x.run_at, v_now
      FROM unnest(p_queues, p_kinds, p_args, p_priorities, p_max_attempts, p_run_ats)
           WITH ORDINALITY AS x(queue, kind, args, priority, max_attempts, run_at, ord)
     WHERE x.run_at > v_now;

    PERFORM ${schema}.append_ready(array_agg(v_ids[x.ord] ORDER BY x.ord), array_agg(x.queue ORDER BY x.ord),
                                   array_agg(x.kind ORDER BY x.ord), array_agg(x.args ORDER BY x.ord),
                                   array_agg(x.priority ORDER BY x.ord), array_agg(x.max_attempts ORDER BY x.ord),
                                   array_agg(0::smallint ORDER BY x.ord), array_agg(0::bigint ORDER BY x.ord),
                                   array_agg(NULL::jsonb ORDER BY x.ord), array_agg(v_now ORDER BY x.ord),
                                   array_agg(coalesce(x.run_at, v_now) ORDER BY x.ord))
       FROM unnest(p_queues, p_kinds, p_args, p_priorities, p_max_attempts, p_run_ats)
            WITH ORDINALITY AS x(queue, kind, args, priority, max_attempts, run_at, ord)
      WHERE x.run_at IS NULL OR x.run_at <= v_now;

    RETURN QUERY SELECT unnest(v_ids);
END
$$;

-- Claim up to p_max jobs from one lane of the given queues (DESIGN.md §5.2.2), as one statement:
--   A. lock one lane head with work, FOR UPDATE SKIP LOCKED (highest lane priority first, random among equals);
--   B/E. walk the cursor over positions that are provably spent: dead reservation gaps below the first visible
--      segment, positions covered by committed claim-attempt evidence, tombstones. That is safe inside this
--      transaction because it only skips committed facts, and it is also how a lost post-commit advance heals;
--   F. take the next rows of that lane in one ready slot, and append exactly one ready_claim_attempt_batches row
--      and exactly one lease_claim_batches row (shared claimed_at and deadline_at) for them.
-- The cursor is not moved over the newly claimed rows here: sequences do not roll back (DESIGN.md §12 item 1).
-- When nothing is claimed, one row comes back with status 'empty' (no visible work) or 'busy' (work exists but
-- every lane with work is being claimed by someone else right now), and job_id NULL.
-- The lane's first committed segment that ends past p_after (DESIGN.md §5.2.2), for claim. The usual read goes
-- through the partitioned parent, which needs a lock on every queue-ring child: a prune holding (or queued for)
-- ACCESS EXCLUSIVE on a child would make the claim wait for the whole TRUNCATE, its index rebuilds and their fsyncs
-- (DESIGN.md preface item 12). So that read may wait 2 ms at most and otherwise fails the claim statement with
-- lock_not_available (55P03); the client then claims again with p_avoid_parent, which reads each child on its own
-- and skips a child it cannot lock within 2 ms, reporting that in "skipped". A skipped child may hold the lane's next
-- rows (prune only takes inert slots, but an operator's lock could be anywhere), so the caller must not treat the
-- positions before the segment found as dead while skipped is true. The usual path has no exception block, since
-- a subtransaction per claim measurably slowed every claim.
CREATE FUNCTION ${schema}.lane_segment(p_queue text, p_priority smallint, p_shard smallint, p_after bigint,
                                       p_avoid_parent boolean,
                                       OUT ready_slot int, OUT ready_generation bigint, OUT first_lane_seq bigint,
                                       OUT next_lane_seq bigint, OUT skipped boolean)
LANGUAGE plpgsql VOLATILE SET plan_cache_mode = force_generic_plan AS $$
#variable_conflict use_column
DECLARE
    v_prev text := current_setting('lock_timeout');
    n      int;
    s      int;
    c      record;
BEGIN
    skipped := false;
    PERFORM set_config('lock_timeout', '2ms', true);
    IF NOT p_avoid_parent THEN
        SELECT rs.ready_slot, rs.ready_generation, rs.first_lane_seq, rs.next_lane_seq
          INTO ready_slot, ready_generation, first_lane_seq, next_lane_seq
          FROM ${schema}.ready_segments rs
         WHERE rs.queue = p_queue AND rs.priority = p_priority AND rs.enqueue_shard = p_shard AND rs.next_lane_seq > p_after
         ORDER BY rs.next_lane_seq
         LIMIT 1;
        PERFORM set_config('lock_timeout', v_prev, true);
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
    PERFORM set_config('lock_timeout', v_prev, true);
END
$$;

CREATE FUNCTION ${schema}.claim_ready(p_queues text[], p_deadline_secs int[], p_max int,
                                      p_materialize boolean[] DEFAULT '{}', p_avoid_parent boolean DEFAULT false)
RETURNS TABLE (status text, job_id bigint, kind text, queue text, args jsonb, priority smallint, attempt smallint,
               run_lease bigint, max_attempts smallint, lane_seq bigint, enqueue_shard smallint, ready_slot int,
               ready_generation bigint, claim_slot int, batch_id bigint, batch_index int, receipt_id bigint,
               claimed_at timestamptz, deadline_at timestamptz, created_at timestamptz, payload jsonb, lease_slot int)
LANGUAGE plpgsql VOLATILE SET plan_cache_mode = force_generic_plan SET enable_seqscan = off AS $$
#variable_conflict use_column
DECLARE
    h            record;
    seg          record;
    ev           record;
    v_cur        bigint;
    v_start      bigint;
    v_enq        bigint;
    v_iter       int := 0;
    v_lanes      int := 0;
    v_tried      text[] := '{}';
    v_dead       boolean;
    v_limit      int;
    v_dl         int;
    v_claim_slot int;
    v_claimed_at timestamptz;
    v_deadline   timestamptz;
    v_mat        boolean;
    v_lease_slot int;
    v_lease_gen  bigint;
    v_busy       boolean := false;
    v_sql        text;
    v_receipts   text;
    v_leases     text;
BEGIN
    -- A lane can look like it has work only because its cursor lags behind committed claims; after healing such
    -- a lane, try the next one instead of reporting the queue empty.
    LOOP
        v_lanes := v_lanes + 1;
        IF v_lanes > 64 THEN
            status := 'empty';
            RETURN NEXT;
            RETURN;
        END IF;
        SELECT ch.queue AS q, ch.priority AS p, ch.enqueue_shard AS s, ch.seq_name AS cseq, eh.seq_name AS eseq
          INTO h
          FROM ${schema}.queue_claim_heads ch
          JOIN ${schema}.queue_enqueue_heads eh
            ON eh.queue = ch.queue AND eh.priority = ch.priority AND eh.enqueue_shard = ch.enqueue_shard
          LEFT JOIN ${schema}.queue_meta m ON m.queue = ch.queue
         WHERE ch.queue = ANY (p_queues)
           AND m.paused IS NOT TRUE
           AND NOT (ch.seq_name = ANY (v_tried))
           AND ${schema}.seq_next(ch.seq_name) < ${schema}.seq_next(eh.seq_name)
         ORDER BY ch.priority, random()
         LIMIT 1
           FOR UPDATE OF ch SKIP LOCKED;

        IF NOT FOUND THEN
            IF v_busy THEN
                -- A lane with work could not be read past a locked child: retry soon rather than wait for a NOTIFY.
                status := 'busy';
            ELSIF EXISTS (SELECT 1
                         FROM ${schema}.queue_claim_heads ch
                         JOIN ${schema}.queue_enqueue_heads eh
                           ON eh.queue = ch.queue AND eh.priority = ch.priority AND eh.enqueue_shard = ch.enqueue_shard
                         LEFT JOIN ${schema}.queue_meta m ON m.queue = ch.queue
                        WHERE ch.queue = ANY (p_queues) AND m.paused IS NOT TRUE
                          AND NOT (ch.seq_name = ANY (v_tried))
                          AND ${schema}.seq_next(ch.seq_name) < ${schema}.seq_next(eh.seq_name)) THEN
                status := 'busy';
            ELSE
                status := 'empty';
            END IF;
            RETURN NEXT;
            RETURN;
        END IF;
        v_tried := v_tried || h.cseq;

        -- Re-read both cursors now that the head is ours (another claimer may have moved it before we locked).
        v_cur   := ${schema}.seq_next(h.cseq);
        v_enq   := ${schema}.seq_next(h.eseq);
        v_start := v_cur;
        v_iter  := 0;

        LOOP
            v_iter := v_iter + 1;
            EXIT WHEN v_iter > 10000;
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
            -- Positions below the first visible committed segment are dead: a later reservation can only be made
            -- after every earlier reservation of the lane committed or aborted.
            IF seg.first_lane_seq > v_cur THEN
                v_cur := seg.first_lane_seq;
            END IF;
            EXECUTE format('SELECT e.first_lane_seq, e.lane_ranges FROM %s.%I e
                             WHERE e.ready_generation = $1 AND e.queue = $2 AND e.priority = $3
                               AND e.enqueue_shard = $4 AND e.next_lane_seq > $5
                             ORDER BY e.next_lane_seq LIMIT 1',
                           '${schema}', 'ready_claim_attempt_batches_' || seg.ready_slot)
               INTO ev USING seg.ready_generation, h.q, h.p, h.s, v_cur;
            IF ev.first_lane_seq IS NOT NULL AND ev.first_lane_seq <= v_cur AND ev.lane_ranges @> v_cur THEN
                SELECT upper(r) INTO v_cur FROM unnest(ev.lane_ranges) r WHERE r @> v_cur;
                CONTINUE;
            END IF;
            EXECUTE format('SELECT EXISTS (SELECT 1 FROM %s.%I t WHERE t.queue = $1 AND t.priority = $2
                               AND t.enqueue_shard = $3 AND t.lane_seq = $4 AND t.ready_generation = $5)',
                           '${schema}', 'ready_tombstones_' || seg.ready_slot)
               INTO v_dead USING h.q, h.p, h.s, v_cur, seg.ready_generation;
            IF v_dead THEN
                v_cur := v_cur + 1;
                CONTINUE;
            END IF;
            EXIT;
        END LOOP;

        IF v_cur > v_start THEN
            PERFORM ${schema}.set_seq_next(h.cseq, v_cur);
        END IF;

        EXIT WHEN seg IS NOT NULL AND v_cur < v_enq;
    END LOOP;

    v_limit      := least(p_max::bigint, v_enq - v_cur)::int;
    v_dl         := coalesce(p_deadline_secs[array_position(p_queues, h.q)], 0);
    v_claimed_at := clock_timestamp();
    v_deadline   := CASE WHEN v_dl > 0 THEN v_claimed_at + make_interval(secs => v_dl) END;
    v_mat        := coalesce(p_materialize[array_position(p_queues, h.q)], false);
    SELECT cr.slot INTO v_claim_slot FROM ${schema}.claim_ring_rotations cr ORDER BY cr.generation DESC LIMIT 1;

    -- Selection, receipt ids and claim evidence are the same for both claim shapes. The range bound on lane_seq
    -- keeps the selection an index range of at most 2 x limit rows whatever the planner believes about the child
    -- (ring children are truncated and refilled faster than statistics follow; with no estimate a planner sorts every
    -- ready row of the lane for a LIMIT). Tombstones inside the range only make the claim smaller, never wrong: the
    -- caller claims again.
    v_sql := $q$
    WITH sel AS MATERIALIZED (
        SELECT r.job_id, r.kind, r.args, r.attempt, r.run_lease, r.max_attempts, r.lane_seq, r.created_at, r.payload
          FROM %1$s.%2$I r
         WHERE r.queue = $1 AND r.priority = $2 AND r.enqueue_shard = $3 AND r.lane_seq >= $4
           AND r.lane_seq < $4 + 2 * $6 AND r.ready_generation = $5
           AND NOT EXISTS (SELECT 1 FROM %1$s.%3$I t
                            WHERE t.queue = $1 AND t.priority = $2 AND t.enqueue_shard = $3
                              AND t.lane_seq = r.lane_seq AND t.ready_generation = $5)
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
    )$q$;

    IF v_mat THEN
        -- Materialized queue (DESIGN.md preface item 4): one row-local receipt and one mutable lease per job, in
        -- the current claim and lease slots; no compact batch row, so each receipt has exactly one claim shape.
        SELECT lr.slot, lr.generation INTO v_lease_slot, v_lease_gen
          FROM ${schema}.lease_ring_rotations lr ORDER BY lr.generation DESC LIMIT 1;
        v_sql := v_sql || $q$,
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
    $q$;
        v_receipts := 'lease_claims_' || v_claim_slot;
        v_leases := 'leases_' || v_lease_slot;
    ELSE
        v_sql := v_sql || $q$,
    cb AS (
        INSERT INTO %1$s.%5$I (claim_slot, ready_slot, ready_generation, queue, priority, enqueue_shard,
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
           $11
      FROM items i CROSS JOIN cb
     ORDER BY i.idx
    $q$;
        v_receipts := 'lease_claim_batches_' || v_claim_slot;
        v_leases := NULL;
    END IF;

    RETURN QUERY EXECUTE format(v_sql, '${schema}', 'ready_entries_' || seg.ready_slot,
                                'ready_tombstones_' || seg.ready_slot, 'ready_claim_attempt_batches_' || seg.ready_slot,
                                v_receipts, coalesce(v_leases, v_receipts))
    USING h.q, h.p, h.s, v_cur, seg.ready_generation, v_limit, seg.ready_slot, v_claim_slot, v_claimed_at, v_deadline,
          v_lease_slot, v_lease_gen;
END
$$;

-- Post-commit claim cursor advance (DESIGN.md §5.2.4), for several lanes in one statement. Monotonic. A lane
-- whose head is locked by a claimer right now is skipped: that claimer heals the cursor from the evidence rows.
CREATE FUNCTION ${schema}.advance_claim_cursors(p_queues text[], p_priorities smallint[], p_shards smallint[],
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

-- Compact successful completion (DESIGN.md §5.3.2) for a batch of attempts, as one statement:
--   1. per-attempt advisory xact locks, sorted, in their own statement;
--   2. per claim slot, a fused statement (fresh snapshot, so it sees any competing closer that committed while we
--      waited) that validates each item against its claim batch row, anti-joins closure evidence, then appends ONE
--      closure batch row per (claim slot, ready slot, generation) and ONE completion batch row per lane group.
-- Returns one row per input position: 'completed'; 'completed_before' (the attempt was already closed as
-- completed: a duplicate of the same attempt within the batch, or an earlier try of this very flush that committed
-- although its answer was lost); 'closed' (the attempt was already closed with another outcome: cancelled, rescued,
-- ...); or 'stale' (no such open attempt: wrong run_lease, receipt, batch or index).
CREATE FUNCTION ${schema}.complete_compact(p_claim_slots int[], p_batch_ids bigint[], p_idxs int[],
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
        EXECUTE format($q$
        WITH f AS (
            SELECT DISTINCT ON (x.rid) x.*
              FROM unnest($1::int[], $2::bigint[], $3::int[], $4::bigint[], $5::bigint[], $6::bigint[])
                   WITH ORDINALITY AS x(cs, bid, idx, jid, rl, rid, ord)
             WHERE x.cs = $7
             ORDER BY x.rid, x.ord
        ),
        ok AS MATERIALIZED (
            SELECT f.ord, f.jid, f.rl, f.rid, b.ready_slot, b.ready_generation, b.queue, b.priority, b.enqueue_shard,
                   b.lane_seqs[f.idx] AS lane_seq, b.attempts[f.idx] AS attempt, b.claimed_at
              FROM f
              JOIN %1$s.%2$I b ON b.batch_id = f.bid
             WHERE f.idx BETWEEN 1 AND b.claimed_count
               AND b.job_ids[f.idx] = f.jid AND b.run_leases[f.idx] = f.rl AND b.receipt_ids[f.idx] = f.rid
               AND NOT EXISTS (SELECT 1 FROM %1$s.%3$I c WHERE c.receipt_ranges @> f.rid)
               AND (NOT $8 OR NOT EXISTS (SELECT 1 FROM %1$s.leases l WHERE l.job_id = f.jid AND l.run_lease = f.rl))
        ),
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
        $q$, '${schema}', 'lease_claim_batches_' || v_slot, 'lease_claim_closure_batches_' || v_slot)
        INTO v_part
        USING p_claim_slots, p_batch_ids, p_idxs, p_job_ids, p_run_leases, p_receipt_ids, v_slot, v_leases;
        v_done := v_done || v_part;
    END LOOP;

    -- Common case: everything applied, answer without touching any table.
    IF cardinality(v_done) = cardinality(p_job_ids) THEN
        RETURN QUERY SELECT u.jid, u.rl, 'completed'::text FROM unnest(p_job_ids, p_run_leases) AS u(jid, rl);
        RETURN;
    END IF;

    -- Rare case: classify the rejected items one by one, each against its own slot's children only.
    FOR x IN SELECT * FROM unnest(p_claim_slots, p_batch_ids, p_idxs, p_job_ids, p_run_leases, p_receipt_ids)
                           WITH ORDINALITY AS u(cs, bid, idx, jid, rl, rid, ord) ORDER BY u.ord LOOP
        job_id := x.jid;
        run_lease := x.rl;
        IF x.ord = ANY (v_done) THEN
            status := 'completed';
        ELSIF to_regclass(format('%s.%I', '${schema}', 'lease_claim_batches_' || x.cs)) IS NULL THEN
            status := 'stale';
        ELSE
            EXECUTE format('SELECT EXISTS (SELECT 1 FROM %s.%I b WHERE b.batch_id = $1 AND $2 BETWEEN 1 AND b.claimed_count
                                 AND b.job_ids[$2] = $3 AND b.run_leases[$2] = $4 AND b.receipt_ids[$2] = $5)',
                           '${schema}', 'lease_claim_batches_' || x.cs)
               INTO v_valid USING x.bid, x.idx, x.jid, x.rl, x.rid;
            IF NOT v_valid THEN
                status := 'stale';
            ELSE
                -- The closure's own outcome tells a completion that already went through (a retried flush whose
                -- first try committed) from one that someone else (cancel, rescue) closed first.
                EXECUTE format('SELECT bool_or(c.outcome = ''completed'') FROM %s.%I c WHERE c.receipt_ranges @> $1',
                               '${schema}', 'lease_claim_closure_batches_' || x.cs)
                   INTO v_closed USING x.rid;
                status := CASE WHEN v_closed THEN 'completed_before' WHEN NOT v_closed THEN 'closed' ELSE 'stale' END;
            END IF;
        END IF;
        RETURN NEXT;
    END LOOP;
END
$$;
