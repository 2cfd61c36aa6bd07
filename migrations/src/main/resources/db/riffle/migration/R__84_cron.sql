-- Cron schedules (docs/cron.md): registration and the fire itself.
-- Repeatable migration (docs/adr/0007): functions only, each as CREATE OR REPLACE, re-applied by Flyway
-- whenever this file changes. Tables, types and indexes live in the versioned V__ files; a function whose
-- signature changes is dropped there first.
--
-- Division of labour: SQL cannot parse cron expressions, so the engine (cron-utils, docs/adr/0011-cron-parser.md)
-- computes which fire times are due; the database decides whether they are enqueued, exactly once.

-- Create or change a schedule. Returns true when the row was created or its definition changed, false when the
-- stored definition is the same already (an engine restart with the same code schedules writes nothing). A change
-- bumps the revision (fires computed from the old definition are refused) and moves evaluate_from to p_now, so the
-- new expression never fires for the time before the change. Pause state and last fire are kept.
CREATE OR REPLACE FUNCTION ${schema}.cron_upsert(p_name text, p_cron text, p_zone text, p_kind text, p_queue text,
                                                 p_args jsonb, p_priority smallint, p_max_attempts smallint,
                                                 p_catch_up int, p_now timestamptz) RETURNS boolean
LANGUAGE plpgsql VOLATILE SET plan_cache_mode = force_custom_plan AS $$
BEGIN
    INSERT INTO ${schema}.cron_schedules AS c (name, cron, zone, kind, queue, args, priority, max_attempts, catch_up,
                                               evaluate_from)
    VALUES (p_name, p_cron, p_zone, p_kind, p_queue, p_args, p_priority, p_max_attempts, p_catch_up, p_now)
    ON CONFLICT (name) DO UPDATE
       SET cron = excluded.cron, zone = excluded.zone, kind = excluded.kind, queue = excluded.queue,
           args = excluded.args, priority = excluded.priority, max_attempts = excluded.max_attempts,
           catch_up = excluded.catch_up, revision = c.revision + 1, evaluate_from = excluded.evaluate_from,
           updated_at = clock_timestamp()
     WHERE (c.cron, c.zone, c.kind, c.queue, c.args, c.priority, c.max_attempts, c.catch_up)
           IS DISTINCT FROM (excluded.cron, excluded.zone, excluded.kind, excluded.queue, excluded.args,
                             excluded.priority, excluded.max_attempts, excluded.catch_up);
    RETURN FOUND;
END
$$;

-- Fire a schedule: enqueue one job per fire time in p_fire_ats (ascending; computed by the engine from the row it
-- read: revision p_revision, last fire p_expected_last) and move last_fire_at to the newest of them, in this one
-- transaction. The UPDATE is a compare-and-set: it matches only while the row still has the revision and the last
-- fire the engine read, is not paused, and the fires are all after what was already fired. Two leaders that overlap
-- (a failover, a slow old leader) read the same row and send the same fires: the second UPDATE waits on the first's
-- row lock, re-checks its WHERE against the committed row (READ COMMITTED re-evaluation), no longer matches, and
-- enqueues nothing. Returns the fires enqueued with their job ids; no rows when the CAS lost.
CREATE OR REPLACE FUNCTION ${schema}.cron_fire(p_name text, p_revision bigint, p_expected_last timestamptz,
                                               p_fire_ats timestamptz[])
RETURNS TABLE (o_fire_at timestamptz, o_job_id bigint)
LANGUAGE plpgsql VOLATILE SET plan_cache_mode = force_custom_plan AS $$
DECLARE
    s     record;
    v_n   int := coalesce(cardinality(p_fire_ats), 0);
    v_ids bigint[];
BEGIN
    IF v_n = 0 THEN
        RETURN;
    END IF;
    UPDATE ${schema}.cron_schedules c
       SET last_fire_at = p_fire_ats[v_n]
     WHERE c.name = p_name
       AND c.revision = p_revision
       AND NOT c.paused
       AND c.last_fire_at IS NOT DISTINCT FROM p_expected_last
       AND p_fire_ats[1] > greatest(c.last_fire_at, c.evaluate_from)
    RETURNING c.queue, c.kind, c.args, c.priority, c.max_attempts INTO s;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    SELECT array_agg(e.j ORDER BY e.ord) INTO v_ids
      FROM ${schema}.enqueue_jobs(array_fill(s.queue, ARRAY[v_n]), array_fill(s.kind, ARRAY[v_n]),
                                  array_fill(s.args, ARRAY[v_n]), array_fill(s.priority, ARRAY[v_n]),
                                  array_fill(s.max_attempts, ARRAY[v_n]), array_fill(NULL::timestamptz, ARRAY[v_n]))
           WITH ORDINALITY AS e(j, ord);
    RETURN QUERY SELECT x.f, x.i FROM unnest(p_fire_ats, v_ids) AS x(f, i);
END
$$;
