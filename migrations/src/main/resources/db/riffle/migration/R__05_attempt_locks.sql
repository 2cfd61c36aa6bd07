-- Per-attempt advisory locks: the one key derivation and the sorted multi-attempt lock every closer takes first.
-- Repeatable migration (docs/adr/0007): functions only, each as CREATE OR REPLACE, re-applied by Flyway
-- whenever this file changes. Tables, types and indexes live in the versioned V__ files; a function whose
-- signature changes is dropped there first.

-- The one derivation of the per-attempt advisory lock key. Completion, close, cancel, rescue, materialization and
-- tests all call this function; nothing computes the key elsewhere.
CREATE OR REPLACE FUNCTION ${schema}.attempt_lock_key(p_job_id bigint, p_run_lease bigint) RETURNS bigint
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    -- Explicit ::text casts keep every step immutable, so the planner inlines this into the caller's query.
    SELECT hashtextextended('${schema_name}.attempt:' || p_job_id::text || ':' || p_run_lease::text, 0)
$$;

-- Takes the per-attempt advisory xact locks of a set of attempts, deduplicated and in key order (so two callers
-- locking overlapping sets cannot deadlock). Callers check and write in a LATER statement, which then sees every
-- competing holder's commit (docs/design/lock-order.md).
CREATE OR REPLACE FUNCTION ${schema}.lock_attempts(p_job_ids bigint[], p_run_leases bigint[]) RETURNS void
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    PERFORM pg_advisory_xact_lock(k)
       FROM (SELECT DISTINCT ${schema}.attempt_lock_key(x.j, x.r) AS k
               FROM unnest(p_job_ids, p_run_leases) AS x(j, r)
              ORDER BY 1) keys;
END
$$;
