-- Queue limits and priority aging (issue #14 items 4 and 6, docs/limits.md, docs/adr/0015-queue-limits.md).
-- Placeholders: ${schema}. No function is defined here (docs/adr/0007); the functions are in R__35_limits.sql and
-- R__30_claim.sql.
--
-- The limits are cold per-queue settings in queue_meta, recorded at engine start from QueueConfig like the backoff
-- (the last engine to start wins) and read by every engine that subscribes to the queue:
--   concurrency_limit       at most this many running attempts of the queue across every engine on the schema
--   rate_limit_jobs/_period_ms/_burst   a token bucket: jobs per period, at most burst claimed at once
--   priority_aging_ms       a lane whose head has been runnable longer than this is claimed as one priority higher
--                           per step (at most priority 1); the stored lane priority never changes
ALTER TABLE ${schema}.queue_meta
    ADD COLUMN concurrency_limit    int
        CONSTRAINT queue_meta_concurrency_limit CHECK (concurrency_limit BETWEEN 1 AND 1000000),
    ADD COLUMN rate_limit_jobs      int,
    ADD COLUMN rate_limit_period_ms bigint,
    ADD COLUMN rate_limit_burst     int,
    ADD COLUMN priority_aging_ms    bigint
        CONSTRAINT queue_meta_priority_aging CHECK (priority_aging_ms BETWEEN 1 AND 31536000000),
    ADD CONSTRAINT queue_meta_rate_limit_whole CHECK ((rate_limit_jobs IS NULL) = (rate_limit_period_ms IS NULL)
                                                      AND (rate_limit_jobs IS NULL) = (rate_limit_burst IS NULL)),
    ADD CONSTRAINT queue_meta_rate_limit_range CHECK (rate_limit_jobs BETWEEN 1 AND 1000000
                                                      AND rate_limit_period_ms BETWEEN 1 AND 86400000
                                                      AND rate_limit_burst BETWEEN 1 AND 1000000);

-- One row per (limited queue, engine with a live subscription on it): the engine's claim on a share of the queue's
-- limits. Warm control class (docs/design/storage-planes.md): an engine renews its rows about once a second
-- (renew_limit_leases), so the update rate scales with engines x limited queues, never with jobs. A row whose
-- expires_at passed belongs to an engine that stopped renewing (crashed, partitioned) and is deleted by the next
-- renewal of any engine. held is what the engine reported holding at its last renewal (running attempts of the
-- queue plus claims in flight); shares (R__35_limits.sql) reserve it for the engine until its next report.
CREATE TABLE ${schema}.queue_limit_leases (
    queue      text        NOT NULL,
    engine_id  uuid        NOT NULL,
    held       int         NOT NULL DEFAULT 0 CHECK (held >= 0),
    created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    renewed_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    expires_at timestamptz NOT NULL,
    PRIMARY KEY (queue, engine_id)
) WITH (fillfactor = 50, autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 100,
        autovacuum_vacuum_cost_limit = 2000);
