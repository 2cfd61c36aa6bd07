-- Cron schedules (docs/cron.md, docs/adr/0011-cron-parser.md): a plain control table, one row per schedule.
-- Reclaim class: control (cold). A row is written when an operator or an engine's start changes the schedule, and
-- once per fire by the maintenance leader (cron_fire, R__84_cron.sql): its update rate follows the schedule's own
-- cadence, never the job throughput, so it stays out of the hot path's vacuum budget (docs/design/storage-planes.md).
CREATE TABLE ${schema}.cron_schedules (
    name          text        PRIMARY KEY,
    cron          text        NOT NULL,
    zone          text        NOT NULL,
    kind          text        NOT NULL,
    queue         text        NOT NULL,
    args          jsonb       NOT NULL DEFAULT '{}',
    priority      smallint    NOT NULL CHECK (priority BETWEEN 1 AND 4),
    max_attempts  smallint    NOT NULL CHECK (max_attempts BETWEEN 1 AND 1000),
    -- Most fires one evaluation enqueues: 1 coalesces missed fires into the latest one; more catches up that many.
    catch_up      int         NOT NULL DEFAULT 1 CHECK (catch_up BETWEEN 1 AND 1000),
    paused        boolean     NOT NULL DEFAULT false,
    -- Bumped by every change of definition or pause state: a fire computed from an older row is refused.
    revision      bigint      NOT NULL DEFAULT 1,
    -- Fires at or before this instant are never enqueued: registration, a change of definition, a resume.
    evaluate_from timestamptz NOT NULL,
    -- The latest fire time enqueued (the compare-and-set target of cron_fire); NULL until the first fire.
    last_fire_at  timestamptz,
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now()
);
