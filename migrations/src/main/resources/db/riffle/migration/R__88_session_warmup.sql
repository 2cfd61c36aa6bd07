-- Session warm-up (RiffleConfig.warmPool, docs/benchmarks.md "Session 12"): plans the claim and completion path of a new
-- connection before it carries load. Repeatable migration (docs/adr/0007): functions only.
--
-- A PL/pgSQL function compiles its body and plans each statement on its first call in a session; for the hot path
-- that is 12-35 ms for the first claim and 7-15 ms for the first completion of a fresh backend, against 1-2 ms warm
-- (psql \timing, PostgreSQL 15). An engine that starts under load pays it on every pooled connection at once, on
-- the same cores that should run the claims: in the bench the first half second after start had a pickup p50 of
-- 40-150 ms. warm_session runs every statement of a claim and a completion once with arguments that match nothing,
-- so each is compiled and planned (generic plans: these functions force them) while nothing is read or written:
-- no row, no transaction id, no sequence value, no NOTIFY. Only the current slots' per-slot functions are warmed;
-- the other slots' are planned when their slot becomes current, as before.
-- Locks: the same relations a claim and a completion lock, in the same order, for a transaction of a few
-- milliseconds (a prune waiting for one of them gives up after its lock timeout and retries, as with a claim). It
-- waits at most 100 ms for any lock (lock_timeout, for this function only) and then fails with lock_not_available:
-- the engine runs it when a pooled connection is opened and hands the connection out either way, so a warm-up
-- stuck behind an operator's lock costs that connection its warm plans, never its use.
-- The engine calls it once per connection, when the connection opens (never per acquire: at ~2 ms a call that
-- would cost more than it saves). A fresh backend runs it in ~45 ms, a warm one in ~2 ms.
-- Returns the number of hot-path calls it made.
CREATE OR REPLACE FUNCTION ${schema}.warm_session() RETURNS int
LANGUAGE plpgsql VOLATILE SET plan_cache_mode = force_generic_plan SET lock_timeout = '100ms' AS $$
DECLARE
    v_ready      int;
    v_generation bigint;
    v_claim      int;
BEGIN
    SELECT c.slot, c.generation INTO v_ready, v_generation FROM ${schema}.ring_cursor('queue') c;
    SELECT cr.slot INTO v_claim FROM ${schema}.claim_ring_rotations cr ORDER BY cr.generation DESC LIMIT 1;
    -- Claim: the lane choice with no queue (nothing to lock), the lane's segment and probe statements for a queue
    -- name no queue can have (names are non-empty), and the current ready slot's claim statement for zero jobs
    -- (its inserts are guarded by HAVING count(*) > 0).
    PERFORM count(*) FROM ${schema}.claim_ready('{}'::text[], '{}'::int[], 1);
    PERFORM * FROM ${schema}.lane_segment('', 1::smallint, 0::smallint, 0, false);
    PERFORM * FROM ${schema}.lane_probe(v_ready, v_generation, '', 1::smallint, 0::smallint, 0);
    PERFORM count(*) FROM ${schema}.claim_compact_slot('', 1::smallint, 0::smallint, 0, v_generation, 0, v_ready,
                                                        v_claim, clock_timestamp(), NULL);
    -- Completion: the wrapper and the current claim slot's statement, for no items.
    PERFORM count(*) FROM ${schema}.complete_compact('{}'::int[], '{}'::bigint[], '{}'::int[], '{}'::bigint[],
                                                      '{}'::bigint[], '{}'::bigint[]);
    PERFORM ${schema}.complete_compact_slot('{}'::int[], '{}'::bigint[], '{}'::int[], '{}'::bigint[], '{}'::bigint[],
                                            '{}'::bigint[], v_claim, false);
    -- The post-commit cursor advance, for no lanes.
    PERFORM ${schema}.advance_claim_cursors('{}'::text[], '{}'::smallint[], '{}'::smallint[], '{}'::bigint[]);
    RETURN 7;
END
$$;
