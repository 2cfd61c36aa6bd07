-- Queue limits (issue #14 item 4, docs/limits.md, docs/adr/0015-queue-limits.md): a global per-queue concurrency
-- limit and a per-queue token-bucket rate limit, both held across every engine on the schema, enforced by each
-- engine at claim time from its share. The share formula lives here and nowhere else (limit_shares).
-- Repeatable migration (docs/adr/0007): functions only, each as CREATE OR REPLACE, re-applied by Flyway
-- whenever this file changes. Tables, types and indexes live in the versioned V__ files; a function whose
-- signature changes is dropped there first.
--
-- Nothing here runs per job. An engine with a live subscription on a limited queue holds one queue_limit_leases row
-- for it (V10) and renews it about once a second (renew_limit_leases); it claims from the queue only through
-- claim_limited, capped by what its share leaves. Queues without limits never reach this file: their claims are
-- claim_ready's, unchanged.

-- Each live lease's share of its queue's limits, for the engine p_engine (one row per limited queue it holds a live
-- lease on). A lease is live until expires_at. With n live leases on a queue, ranked by engine_id:
--   fair share   = N / n, plus 1 for the first N % n engines (the fair shares add up to N exactly);
--   settled      = every other live lease has renewed after this one was created, so every other engine has seen
--                  it and already claims within its own, smaller fair share. Renewals of one queue are serialized
--                  (renew_limit_leases takes a transaction advisory lock per queue before it reads the clock), so a
--                  renewal stamped after this lease's creation started after the creating transaction committed
--                  and saw it;
--   concurrency_share = 0 while not settled; else least(fair share, N - the sum over the other engines of
--                  greatest(what they reported holding, their fair share)): an engine still holding more than its
--                  fair share (it held it before this one joined) keeps its attempts, and the others wait for
--                  them to end instead of going past N;
--   rate_fraction = 1/n once settled, else 0: the engine's bucket refills at rate_fraction x jobs per period and
--                  holds at most greatest(1, rate_fraction x burst) tokens (the engine keeps the bucket).
-- concurrency_share is NULL when the queue has no concurrency limit, rate_fraction when it has no rate limit.
CREATE OR REPLACE FUNCTION ${schema}.limit_shares(p_engine uuid, p_queues text[])
RETURNS TABLE (queue text, concurrency_limit int, concurrency_share int, rate_jobs int, rate_period_ms bigint,
               rate_burst int, rate_fraction double precision, live_engines int)
LANGUAGE sql VOLATILE AS $$
    WITH live AS (
        SELECT l.queue, l.engine_id, l.held, l.created_at, l.renewed_at,
               count(*) OVER w AS n, row_number() OVER (w ORDER BY l.engine_id) AS rnk
          FROM ${schema}.queue_limit_leases l
         WHERE l.queue = ANY (p_queues) AND l.expires_at > clock_timestamp()
        WINDOW w AS (PARTITION BY l.queue)
    ),
    fair AS (
        SELECT lv.queue, lv.engine_id, lv.held, lv.created_at, lv.renewed_at, lv.n, m.concurrency_limit AS lim,
               m.concurrency_limit / lv.n + (lv.rnk <= m.concurrency_limit % lv.n)::int AS fair
          FROM live lv
          JOIN ${schema}.queue_meta m ON m.queue = lv.queue
    ),
    mine AS (
        SELECT f.*,
               NOT EXISTS (SELECT 1 FROM live o
                            WHERE o.queue = f.queue AND o.engine_id <> f.engine_id
                              AND o.renewed_at <= f.created_at) AS settled,
               (SELECT coalesce(sum(greatest(o.held, o.fair)), 0) FROM fair o
                 WHERE o.queue = f.queue AND o.engine_id <> f.engine_id) AS others
          FROM fair f
         WHERE f.engine_id = p_engine
    )
    SELECT mi.queue, m.concurrency_limit,
           CASE WHEN m.concurrency_limit IS NULL THEN NULL
                WHEN NOT mi.settled THEN 0
                ELSE greatest(0, least(mi.fair, m.concurrency_limit - mi.others)) END::int,
           m.rate_limit_jobs, m.rate_limit_period_ms, m.rate_limit_burst,
           CASE WHEN m.rate_limit_jobs IS NULL THEN NULL
                WHEN NOT mi.settled THEN 0::double precision
                ELSE 1.0::double precision / mi.n END,
           mi.n::int
      FROM mine mi
      JOIN ${schema}.queue_meta m ON m.queue = mi.queue
$$;

-- An engine's renewal (about once a second while it has subscriptions): takes the queues' renewal locks (one
-- transaction advisory lock per queue, keyed by this schema's queue_limit_leases table and the queue, in queue order),
-- drops expired leases of these queues (their
-- engines stopped renewing), drops this engine's leases of queues that have no limit any more, upserts this engine's
-- lease on every limited queue of p_queues (expiring p_ttl_ms from now, with what it holds: p_helds, aligned with
-- p_queues) and returns its shares (limit_shares). Queues of p_queues without limits get no lease and no row.
CREATE OR REPLACE FUNCTION ${schema}.renew_limit_leases(p_engine uuid, p_queues text[], p_helds int[], p_ttl_ms int)
RETURNS TABLE (queue text, concurrency_limit int, concurrency_share int, rate_jobs int, rate_period_ms bigint,
               rate_burst int, rate_fraction double precision, live_engines int)
LANGUAGE plpgsql VOLATILE SET plan_cache_mode = force_generic_plan AS $$
#variable_conflict use_column
BEGIN
    PERFORM pg_advisory_xact_lock('${schema}.queue_limit_leases'::regclass::oid::int, hashtext(q))
       FROM (SELECT DISTINCT q FROM unnest(p_queues) AS q ORDER BY q) AS x;
    DELETE FROM ${schema}.queue_limit_leases l
     WHERE l.queue = ANY (p_queues) AND l.expires_at <= clock_timestamp();
    DELETE FROM ${schema}.queue_limit_leases l
     WHERE l.engine_id = p_engine AND l.queue = ANY (p_queues)
       AND NOT EXISTS (SELECT 1 FROM ${schema}.queue_meta m
                        WHERE m.queue = l.queue AND (m.concurrency_limit IS NOT NULL OR m.rate_limit_jobs IS NOT NULL));
    INSERT INTO ${schema}.queue_limit_leases AS l (queue, engine_id, held, expires_at)
    SELECT x.q, p_engine, greatest(coalesce(x.h, 0), 0), clock_timestamp() + make_interval(secs => p_ttl_ms / 1000.0)
      FROM unnest(p_queues, p_helds) AS x(q, h)
      JOIN ${schema}.queue_meta m ON m.queue = x.q
     WHERE m.concurrency_limit IS NOT NULL OR m.rate_limit_jobs IS NOT NULL
    ON CONFLICT (queue, engine_id) DO UPDATE
       SET held = excluded.held, renewed_at = clock_timestamp(), expires_at = excluded.expires_at;
    RETURN QUERY SELECT * FROM ${schema}.limit_shares(p_engine, p_queues);
END
$$;

-- An engine gives up its leases on p_queues (its last subscription on them ended, or it closes): the other engines
-- get the share back at their next renewal.
CREATE OR REPLACE FUNCTION ${schema}.release_limit_leases(p_engine uuid, p_queues text[]) RETURNS int
LANGUAGE plpgsql VOLATILE SET plan_cache_mode = force_generic_plan AS $$
DECLARE
    n int;
BEGIN
    DELETE FROM ${schema}.queue_limit_leases l WHERE l.engine_id = p_engine AND l.queue = ANY (p_queues);
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n;
END
$$;

-- claim_limited, the claim of a subscription with a limited queue, is the claim itself with a cap per queue: it lives
-- with the claim in R__30_claim.sql (claim_ready is claim_limited without caps).
