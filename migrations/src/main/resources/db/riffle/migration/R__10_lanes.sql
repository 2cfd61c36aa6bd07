-- Lanes: the registry, the enqueue and claim cursors (sequences) and the lane reservation lock.
-- Repeatable migration (docs/adr/0007): functions only, each as CREATE OR REPLACE, re-applied by Flyway
-- whenever this file changes. Tables, types and indexes live in the versioned V__ files; a function whose
-- signature changes is dropped there first.

-- Next value a lane sequence would hand out, without consuming it. Sequences here are never set with
-- is_called = false except back to 1, so a NULL last value means "next is 1".
CREATE OR REPLACE FUNCTION ${schema}.seq_next(p_seq text) RETURNS bigint
LANGUAGE sql VOLATILE AS $$
    SELECT coalesce(pg_sequence_last_value(('${schema}.' || quote_ident(p_seq))::regclass) + 1, 1)
$$;

-- Move a claim cursor forward to at least p_next; never backwards. Callers serialize per lane by holding the
-- lane's claim head row lock.
CREATE OR REPLACE FUNCTION ${schema}.set_seq_next(p_seq text, p_next bigint) RETURNS bigint
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

-- The lane reservation lock key of (queue, priority, shard): the same key reserve_lane takes, derived from the
-- lane's enqueue sequence name (ensure_lane), so it can be tried before the lane exists.
CREATE OR REPLACE FUNCTION ${schema}.lane_lock_key(p_queue text, p_priority smallint, p_shard smallint) RETURNS bigint
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT hashtextextended('${schema_name}.lane_e_' || md5(p_queue || ':' || p_priority::text || ':' || p_shard::text), 0)
$$;

-- The shard of a queue this transaction tries first: its transaction id modulo the queue's shard count in
-- queue_meta (a queue without a committed row yet has one shard). One transaction always prefers the same shard.
CREATE OR REPLACE FUNCTION ${schema}.preferred_enqueue_shard(p_queue text) RETURNS smallint
LANGUAGE sql VOLATILE AS $$
    SELECT (txid_current() % coalesce((SELECT m.enqueue_shards FROM ${schema}.queue_meta m WHERE m.queue = p_queue), 1))::smallint
$$;

-- The enqueue shard a transaction appends a queue's rows of one priority to, with that shard's reservation lock
-- taken (docs/design/delivery-contract.md#enqueue-shards). Each shard of a (queue, priority) is its own lane, with
-- its own cursor, head lock and reservation lock, so claims on different shards run side by side. Shards are tried
-- from preferred_enqueue_shard on: transactions spread over the shards, and one transaction keeps coming back to
-- the shard it already holds (the lock is re-entrant). A shard held by another open transaction is passed over for the next one, so a
-- producer transaction left open holds one shard of a lane and nobody queues behind it while another shard is
-- free. Only the try-locks run in a loop, and they never wait, so no lock cycle can form among them. When every
-- shard is held: with p_wait, wait for the preferred one (what an unsharded lane always did); without, NULL.
CREATE OR REPLACE FUNCTION ${schema}.pick_enqueue_shard(p_queue text, p_priority smallint, p_wait boolean)
RETURNS smallint
LANGUAGE plpgsql VOLATILE SET plan_cache_mode = force_generic_plan AS $$
DECLARE
    v_n    int;
    v_pref int := ${schema}.preferred_enqueue_shard(p_queue);
    v_s    smallint;
BEGIN
    SELECT m.enqueue_shards INTO v_n FROM ${schema}.queue_meta m WHERE m.queue = p_queue;
    v_n := coalesce(v_n, 1);
    FOR i IN 0 .. v_n - 1 LOOP
        v_s := ((v_pref + i) % v_n)::smallint;
        IF pg_try_advisory_xact_lock(${schema}.lane_lock_key(p_queue, p_priority, v_s)) THEN
            RETURN v_s;
        END IF;
    END LOOP;
    IF NOT p_wait THEN
        RETURN NULL;
    END IF;
    PERFORM pg_advisory_xact_lock(${schema}.lane_lock_key(p_queue, p_priority, v_pref::smallint));
    RETURN v_pref::smallint;
END
$$;

-- Create a lane (its queue_meta row, both heads, both sequences) if absent. Serialized per lane by an advisory xact
-- lock; the sequences are created in the caller's transaction, so a rolled-back creator leaves nothing behind.
CREATE OR REPLACE FUNCTION ${schema}.ensure_lane(p_queue text, p_priority smallint, p_shard smallint) RETURNS text
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
    -- No queue_lanes row: nothing reads that registry, and inserting the (queue, priority) row of a lane whose first
    -- shard an open producer transaction is creating would wait for that transaction, which sharding must not do.
    INSERT INTO ${schema}.queue_enqueue_heads (queue, priority, enqueue_shard, seq_name)
         VALUES (p_queue, p_priority, p_shard, v_enq);
    INSERT INTO ${schema}.queue_claim_heads (queue, priority, enqueue_shard, seq_name)
         VALUES (p_queue, p_priority, p_shard, v_claim);
    RETURN v_enq;
END
$$;

-- Reserve p_n consecutive lane positions. The advisory lock is held until the caller's transaction ends: within a
-- lane, position N+1 can only become visible after position N committed or aborted (docs/design/delivery-contract.md).
CREATE OR REPLACE FUNCTION ${schema}.reserve_lane(p_queue text, p_priority smallint, p_shard smallint, p_n bigint) RETURNS bigint
LANGUAGE plpgsql VOLATILE SET plan_cache_mode = force_generic_plan AS $$
DECLARE
    v_seq   text := ${schema}.ensure_lane(p_queue, p_priority, p_shard);
    v_first bigint;
BEGIN
    PERFORM pg_advisory_xact_lock(${schema}.lane_lock_key(p_queue, p_priority, p_shard));
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
CREATE OR REPLACE FUNCTION ${schema}.try_lock_lane(p_queue text, p_priority smallint, p_shard smallint) RETURNS boolean
LANGUAGE plpgsql VOLATILE SET lock_timeout = '50ms' SET plan_cache_mode = force_generic_plan AS $$
DECLARE
    v_seq text;
BEGIN
    SELECT seq_name INTO v_seq FROM ${schema}.queue_enqueue_heads
     WHERE queue = p_queue AND priority = p_priority AND enqueue_shard = p_shard;
    IF FOUND AND pg_try_advisory_xact_lock(${schema}.lane_lock_key(p_queue, p_priority, p_shard)) THEN
        RETURN true;
    END IF;
    -- Contended or new lane only: the subtransaction is not paid by the common case above.
    BEGIN
        v_seq := ${schema}.ensure_lane(p_queue, p_priority, p_shard);
        PERFORM pg_advisory_xact_lock(${schema}.lane_lock_key(p_queue, p_priority, p_shard));
        RETURN true;
    EXCEPTION WHEN lock_not_available THEN
        RETURN false;
    END;
END
$$;

-- Take the reservation lock of one enqueue shard of (queue, priority) for promotion, DLQ retry and release, never
-- queueing behind a producer transaction: a free shard is taken at once (pick_enqueue_shard); when every shard is
-- held, try_lock_lane's bounded wait on the preferred one lets short holders finish. The lane of the shard taken is
-- created here if new, under the same bound. True when a shard is locked. The caller's append_ready then picks a
-- shard it can lock without waiting: the one held here (the lock is re-entrant), or one tried earlier in the same
-- order that has come free since.
CREATE OR REPLACE FUNCTION ${schema}.try_lock_enqueue_shard(p_queue text, p_priority smallint) RETURNS boolean
LANGUAGE plpgsql VOLATILE SET plan_cache_mode = force_generic_plan AS $$
BEGIN
    RETURN ${schema}.try_lock_lane(p_queue, p_priority,
                                   coalesce(${schema}.pick_enqueue_shard(p_queue, p_priority, false),
                                            ${schema}.preferred_enqueue_shard(p_queue)));
END
$$;
