-- Enqueue: appending runnable rows to the queue ring (also used by promotion and DLQ retry).
-- Repeatable migration (docs/adr/0007): functions only, each as CREATE OR REPLACE, re-applied by Flyway
-- whenever this file changes. Tables, types and indexes live in the versioned V__ files; a function whose
-- signature changes is dropped there first.

-- Hot-path functions (docs/design/delivery-contract.md). Each is called as ONE autocommit statement, so a claim or a completion
-- batch is one round trip and one commit. Functions run at READ COMMITTED and, being VOLATILE plpgsql, take a new
-- snapshot per statement: that is what makes "lock in one statement, look in the next" work (docs/design/lock-order.md).
-- Slot-specific statements address the child partition by name through EXECUTE (planned on one small table, and
-- never touching sibling children that a prune may be truncating: docs/design/lock-order.md). The other
-- statements run with cached generic plans; planning them per call with 16 partitions cost more than the work.

-- Append runnable rows to the queue ring (docs/design/delivery-contract.md): reserve lane positions in a stable
-- (queue, priority) order, each lane on an enqueue shard of its queue that this transaction can lock
-- (pick_enqueue_shard), read the ring cursor after reserving (so a later reservation never lands in an older
-- generation), insert the ready rows and one segment per lane, and NOTIFY (delivered on commit, dropped on
-- rollback). Used by enqueue, promotion and DLQ retry; rows keep their job id, attempt and run_lease.
CREATE OR REPLACE FUNCTION ${schema}.append_ready(p_job_ids bigint[], p_queues text[], p_kinds text[], p_args jsonb[],
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
    v_shards smallint[] := '{}';
    v_firsts bigint[] := '{}';
    v_shard  smallint;
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
        v_shard  := ${schema}.pick_enqueue_shard(l.queue, l.priority, true);
        v_lanes  := v_lanes || l.queue;
        v_prios  := v_prios || l.priority;
        v_shards := v_shards || v_shard;
        v_firsts := v_firsts || ${schema}.reserve_lane(l.queue, l.priority, v_shard, l.n);
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
        SELECT i.*, ln.shard,
               ln.first + row_number() OVER (PARTITION BY i.queue, i.priority ORDER BY i.ord) - 1 AS lane_seq
          FROM input i
          JOIN unnest(v_lanes, v_prios, v_shards, v_firsts) AS ln(queue, priority, shard, first)
            ON ln.queue = i.queue AND ln.priority = i.priority
    ),
    ready AS (
        INSERT INTO ${schema}.ready_entries (ready_slot, ready_generation, job_id, kind, queue, args, priority, attempt,
                                             run_lease, max_attempts, lane_seq, enqueue_shard, run_at, created_at,
                                             payload)
        SELECT v_slot, v_gen, p.job_id, p.kind, p.queue, p.args, p.priority, p.attempt, p.run_lease, p.max_attempts,
               p.lane_seq, p.shard, coalesce(p.run_at, v_now), coalesce(p.created_at, v_now), p.payload
          FROM placed p
    ),
    segs AS (
        INSERT INTO ${schema}.ready_segments (ready_slot, ready_generation, queue, priority, enqueue_shard,
                                              first_lane_seq, next_lane_seq, first_run_at, created_at)
        SELECT v_slot, v_gen, p.queue, p.priority, p.shard, min(p.lane_seq), max(p.lane_seq) + 1,
               min(coalesce(p.run_at, v_now)), v_now
          FROM placed p
         GROUP BY p.queue, p.priority, p.shard
    )
    -- Data-modifying CTEs always run to completion, whether or not the outer query reads them.
    SELECT 1 INTO v_dummy;

    PERFORM pg_notify(${schema}.ready_channel(), q) FROM (SELECT DISTINCT unnest(p_queues) AS q) d;
    RETURN cardinality(p_job_ids);
END
$$;

-- Where new jobs go, the one rule for every enqueue path (enqueue_jobs, enqueue_unique_jobs): a run_at in the future
-- is scheduled in deferred_jobs (no lane work, no NOTIFY), the rest is appended to the ready ring in input order
-- (append_ready, with its NOTIFY). p_ids[i] NULL skips row i (a duplicate of a unique key). Arrays positionally aligned.
-- p_trace: the trace context current at enqueue (docs/tracing.md), e.g. {"traceparent": "00-..."}, stored for every
-- row as the engine-owned payload {"trace": p_trace}, which retries, promotion and DLQ retry carry along; NULL (tracing
-- off, or nothing to propagate) writes no payload, as before.
CREATE OR REPLACE FUNCTION ${schema}.place_new_jobs(p_ids bigint[], p_queues text[], p_kinds text[], p_args jsonb[],
                                         p_priorities smallint[], p_max_attempts smallint[], p_run_ats timestamptz[],
                                         p_now timestamptz, p_trace jsonb DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql VOLATILE SET plan_cache_mode = force_generic_plan AS $$
DECLARE
    v_payload jsonb := CASE WHEN p_trace IS NULL THEN NULL ELSE jsonb_build_object('trace', p_trace) END;
BEGIN
    INSERT INTO ${schema}.deferred_jobs (job_id, kind, queue, args, state, priority, attempt, run_lease,
                                         max_attempts, run_at, created_at, payload)
    SELECT p_ids[x.ord], x.kind, x.queue, x.args, 'scheduled', x.priority, 0, 0, x.max_attempts, x.run_at, p_now,
           v_payload
      FROM unnest(p_queues, p_kinds, p_args, p_priorities, p_max_attempts, p_run_ats)
           WITH ORDINALITY AS x(queue, kind, args, priority, max_attempts, run_at, ord)
     WHERE p_ids[x.ord] IS NOT NULL AND x.run_at > p_now;

    PERFORM ${schema}.append_ready(array_agg(p_ids[x.ord] ORDER BY x.ord), array_agg(x.queue ORDER BY x.ord),
                                   array_agg(x.kind ORDER BY x.ord), array_agg(x.args ORDER BY x.ord),
                                   array_agg(x.priority ORDER BY x.ord), array_agg(x.max_attempts ORDER BY x.ord),
                                   array_agg(0::smallint ORDER BY x.ord), array_agg(0::bigint ORDER BY x.ord),
                                   array_agg(v_payload ORDER BY x.ord), array_agg(p_now ORDER BY x.ord),
                                   array_agg(coalesce(x.run_at, p_now) ORDER BY x.ord))
       FROM unnest(p_queues, p_kinds, p_args, p_priorities, p_max_attempts, p_run_ats)
            WITH ORDINALITY AS x(queue, kind, args, priority, max_attempts, run_at, ord)
      WHERE p_ids[x.ord] IS NOT NULL AND (x.run_at IS NULL OR x.run_at <= p_now);
END
$$;

-- Enqueue a batch in the caller's transaction (docs/design/delivery-contract.md). Arrays are positionally aligned; job ids come
-- back in input order. Rows with run_at in the future go to deferred_jobs (no lane work, no NOTIFY). p_trace: the
-- batch's trace context, see place_new_jobs.
CREATE OR REPLACE FUNCTION ${schema}.enqueue_jobs(p_queues text[], p_kinds text[], p_args jsonb[], p_priorities smallint[],
                                       p_max_attempts smallint[], p_run_ats timestamptz[], p_trace jsonb DEFAULT NULL)
RETURNS SETOF bigint
LANGUAGE plpgsql VOLATILE SET plan_cache_mode = force_generic_plan AS $$
DECLARE
    v_now timestamptz := now();
    v_ids bigint[];
BEGIN
    SELECT array_agg(nextval('${schema}.job_id_seq') ORDER BY g) INTO v_ids
      FROM generate_series(1, cardinality(p_kinds)) g;

    PERFORM ${schema}.place_new_jobs(v_ids, p_queues, p_kinds, p_args, p_priorities, p_max_attempts, p_run_ats, v_now,
                                     p_trace);

    RETURN QUERY SELECT unnest(v_ids);
END
$$;
