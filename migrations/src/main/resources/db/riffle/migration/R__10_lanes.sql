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

-- Create a lane (registry row, both heads, both sequences) if absent. Serialized per lane by an advisory xact
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
    INSERT INTO ${schema}.queue_lanes (queue, priority) VALUES (p_queue, p_priority) ON CONFLICT DO NOTHING;
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
CREATE OR REPLACE FUNCTION ${schema}.try_lock_lane(p_queue text, p_priority smallint, p_shard smallint) RETURNS boolean
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
