-- Pause and resume a queue (docs/queue-pause.md): operator writes on the cold queue_meta control row.
-- Repeatable migration (docs/adr/0007): functions only, each as CREATE OR REPLACE, re-applied by Flyway
-- whenever this file changes. Tables, types and indexes live in the versioned V__ files; a function whose
-- signature changes is dropped there first.
--
-- What a pause does is decided where jobs move, not here: claim_ready (R__30) and promotion (R__25) skip queues
-- whose queue_meta row says paused. Enqueue does not look at the flag, so a paused queue keeps accepting jobs, and
-- attempts already claimed run to their end and close as usual. Nothing here touches a job row.

-- Pause: returns true when the queue was running and is paused now, false when it was paused already (the first
-- pause's time and author are kept). Creates the queue's control row when it has none (defaults as in V1).
CREATE OR REPLACE FUNCTION ${schema}.pause_queue(p_queue text, p_by text) RETURNS boolean
LANGUAGE plpgsql VOLATILE SET plan_cache_mode = force_custom_plan AS $$
BEGIN
    INSERT INTO ${schema}.queue_meta AS m (queue, paused, paused_at, paused_by)
    VALUES (p_queue, true, clock_timestamp(), p_by)
    ON CONFLICT (queue) DO UPDATE SET paused = true, paused_at = excluded.paused_at, paused_by = excluded.paused_by
     WHERE NOT m.paused;
    RETURN FOUND;
END
$$;

-- Resume: returns true when the queue was paused and runs again, false when it was not paused. Either way the
-- queue's wake-up NOTIFY is sent (delivered on commit), so every subscriber of the queue claims at once instead of
-- waiting for its safety poll; a resume that changed nothing costs subscribers one empty claim.
CREATE OR REPLACE FUNCTION ${schema}.resume_queue(p_queue text) RETURNS boolean
LANGUAGE plpgsql VOLATILE SET plan_cache_mode = force_custom_plan AS $$
DECLARE
    v_changed boolean;
BEGIN
    UPDATE ${schema}.queue_meta m SET paused = false, paused_at = NULL, paused_by = NULL
     WHERE m.queue = p_queue AND m.paused;
    v_changed := FOUND;
    PERFORM pg_notify(${schema}.ready_channel(), p_queue);
    RETURN v_changed;
END
$$;
