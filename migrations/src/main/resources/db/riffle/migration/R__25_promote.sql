-- Promotion: due deferred jobs (scheduled, retryable) back into the ready ring.
-- Repeatable migration (docs/adr/0007): functions only, each as CREATE OR REPLACE, re-applied by Flyway
-- whenever this file changes. Tables, types and indexes live in the versioned V__ files; a function whose
-- signature changes is dropped there first.

-- Promote due deferred jobs into the ready ring (docs/design/maintenance.md): delete up to p_limit due rows (oldest first,
-- SKIP LOCKED so overlapping leaders never take the same row) and re-append them in the same transaction, so a
-- leader dying mid-batch loses nothing and duplicates nothing. Keeps job id, attempt, run_lease and payload.
-- Lane locks come first, through try_lock_enqueue_shard, before any row lock: a lane held by an open producer transaction
-- is skipped, its due rows are not touched (not even row-locked) and wait for a later tick, and the selection is
-- repeated without the skipped lanes so that their backlog cannot fill the batch and starve every other lane.
-- Each pass adds at least one skipped lane or ends the loop.
CREATE OR REPLACE FUNCTION ${schema}.promote_due(p_limit int) RETURNS int
LANGUAGE plpgsql VOLATILE SET plan_cache_mode = force_custom_plan AS $$
DECLARE
    v_q       text[] := '{}';
    v_p       smallint[] := '{}';
    v_skip_q  text[] := '{}';
    v_skip_p  smallint[] := '{}';
    v_skipped boolean;
    l         record;
    r         record;
BEGIN
    LOOP
        v_skipped := false;
        FOR l IN
            SELECT DISTINCT c.queue, c.priority
              FROM (SELECT dj.queue, dj.priority
                      FROM ${schema}.deferred_jobs dj
                      LEFT JOIN ${schema}.queue_meta m ON m.queue = dj.queue
                     WHERE dj.run_at <= clock_timestamp() AND m.paused IS NOT TRUE
                       AND NOT EXISTS (SELECT 1 FROM unnest(v_skip_q, v_skip_p) AS s(q, p)
                                        WHERE s.q = dj.queue AND s.p = dj.priority)
                     ORDER BY dj.run_at, dj.priority, dj.job_id
                     LIMIT p_limit) c
             WHERE NOT EXISTS (SELECT 1 FROM unnest(v_q, v_p) AS k(q, p) WHERE k.q = c.queue AND k.p = c.priority)
             ORDER BY c.queue, c.priority
        LOOP
            IF ${schema}.try_lock_enqueue_shard(l.queue, l.priority) THEN
                v_q := v_q || l.queue;
                v_p := v_p || l.priority;
            ELSE
                v_skip_q := v_skip_q || l.queue;
                v_skip_p := v_skip_p || l.priority;
                v_skipped := true;
            END IF;
        END LOOP;
        EXIT WHEN NOT v_skipped;
    END LOOP;

    WITH due AS (
        DELETE FROM ${schema}.deferred_jobs d
         WHERE d.job_id IN (SELECT dj.job_id
                              FROM ${schema}.deferred_jobs dj
                              LEFT JOIN ${schema}.queue_meta m ON m.queue = dj.queue
                             WHERE dj.run_at <= clock_timestamp() AND m.paused IS NOT TRUE
                               AND EXISTS (SELECT 1 FROM unnest(v_q, v_p) AS k(q, p)
                                            WHERE k.q = dj.queue AND k.p = dj.priority)
                             ORDER BY dj.run_at, dj.priority, dj.job_id
                             LIMIT p_limit
                               FOR UPDATE OF dj SKIP LOCKED)
        RETURNING d.*
    )
    SELECT array_agg(job_id ORDER BY run_at, job_id) AS ids, array_agg(queue ORDER BY run_at, job_id) AS queues,
           array_agg(kind ORDER BY run_at, job_id) AS kinds, array_agg(args ORDER BY run_at, job_id) AS args,
           array_agg(priority ORDER BY run_at, job_id) AS prios, array_agg(max_attempts ORDER BY run_at, job_id) AS maxs,
           array_agg(attempt ORDER BY run_at, job_id) AS attempts, array_agg(run_lease ORDER BY run_at, job_id) AS leases,
           array_agg(payload ORDER BY run_at, job_id) AS payloads, array_agg(created_at ORDER BY run_at, job_id) AS created,
           array_agg(clock_timestamp() ORDER BY run_at, job_id) AS run_ats
      INTO r
      FROM due;
    RETURN ${schema}.append_ready(r.ids, r.queues, r.kinds, r.args, r.prios, r.maxs, r.attempts, r.leases,
                                  r.payloads, r.created, r.run_ats);
END
$$;
