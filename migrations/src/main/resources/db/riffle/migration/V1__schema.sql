-- Riffle storage schema, created whole (docs/design/storage-planes.md): types, sequences, tables, constraints, partitions, indexes and
-- the terminal_jobs view. No function is defined here: every function lives in a repeatable R__<nn>_<mechanism>.sql
-- file, which Flyway applies after the versioned ones (docs/adr/0007). From the first release on this file is frozen;
-- schema changes go into new V__ files, and a function whose signature changes is dropped in that V__ file.
-- Placeholders: ${schema} (quoted identifier), ${schema_name} (bare text), ${queue_slots}, ${lease_slots}, ${claim_slots}.
-- Reclaim classes (docs/design/storage-planes.md) are stated per table: "ring append-only" tables only ever see INSERT and are
-- reclaimed by TRUNCATE of a whole slot; nothing on the hot path UPDATEs or DELETEs them.

CREATE TYPE ${schema}.job_state AS ENUM
    ('scheduled', 'available', 'running', 'completed', 'retryable', 'failed', 'cancelled', 'waiting_external');

-- Global sequences. Every id is immutable once issued; receipt ids are never reused.
CREATE SEQUENCE ${schema}.job_id_seq;
CREATE SEQUENCE ${schema}.lease_claim_receipt_id_seq;
CREATE SEQUENCE ${schema}.lease_claim_batch_id_seq;
CREATE SEQUENCE ${schema}.lease_claim_closure_batch_id_seq;
CREATE SEQUENCE ${schema}.ready_claim_attempt_batch_id_seq;
CREATE SEQUENCE ${schema}.receipt_completion_batch_id_seq;

-- ---------------------------------------------------------------------------------------------------------------
-- Control plane (cold)
-- ---------------------------------------------------------------------------------------------------------------

-- Operator-owned per-queue settings. Claim and promotion skip paused queues.
CREATE TABLE ${schema}.queue_meta (
    queue          text PRIMARY KEY,
    paused         boolean     NOT NULL DEFAULT false,
    paused_at      timestamptz,
    paused_by      text,
    enqueue_shards smallint    NOT NULL DEFAULT 1 CHECK (enqueue_shards BETWEEN 1 AND 64),
    dlq_enabled    boolean,
    created_at     timestamptz NOT NULL DEFAULT now()
);

-- Lane registry only: no counters (a per-lane counter UPDATE per job is the 564 jobs/s lesson, docs/design/storage-planes.md).
CREATE TABLE ${schema}.queue_lanes (
    queue      text     NOT NULL,
    priority   smallint NOT NULL CHECK (priority BETWEEN 1 AND 4),
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (queue, priority)
);

-- Lane heads: lock targets plus the names of the lane's two sequences. The cursors are sequence values
-- (non-transactional, no dead tuples); these rows are never updated per job.
CREATE TABLE ${schema}.queue_enqueue_heads (
    queue         text     NOT NULL,
    priority      smallint NOT NULL,
    enqueue_shard smallint NOT NULL,
    seq_name      text     NOT NULL UNIQUE,
    PRIMARY KEY (queue, priority, enqueue_shard)
) WITH (fillfactor = 50);

CREATE TABLE ${schema}.queue_claim_heads (
    queue         text     NOT NULL,
    priority      smallint NOT NULL,
    enqueue_shard smallint NOT NULL,
    seq_name      text     NOT NULL UNIQUE,
    PRIMARY KEY (queue, priority, enqueue_shard)
) WITH (fillfactor = 50);

-- Optional bounded-claimers throttle (docs/design/delivery-contract.md); created now so later work adds no tables.
CREATE TABLE ${schema}.queue_claimer_state (
    queue          text PRIMARY KEY,
    target_claimers smallint NOT NULL DEFAULT 1,
    updated_at     timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE ${schema}.queue_claimer_leases (
    queue        text     NOT NULL,
    claimer_slot smallint NOT NULL,
    owner        text,
    epoch        bigint   NOT NULL DEFAULT 0,
    expires_at   timestamptz,
    PRIMARY KEY (queue, claimer_slot)
);

-- Ring state (cold config), rotation ledgers (append-only cursor: current = max generation) and slot rows
-- (row-lock targets for prune). Genesis is generation 0 at slot 0.
CREATE TABLE ${schema}.queue_ring_state (
    singleton                    boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    slot_count                   int NOT NULL CHECK (slot_count >= 4),
    terminal_counter_trusted_at  timestamptz
);
CREATE TABLE ${schema}.queue_ring_rotations (
    generation bigint PRIMARY KEY CHECK (generation >= 0),
    slot       int    NOT NULL,
    rotated_at timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE TABLE ${schema}.queue_ring_slots (slot int PRIMARY KEY);

CREATE TABLE ${schema}.lease_ring_state (
    singleton  boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    slot_count int NOT NULL CHECK (slot_count >= 2)
);
CREATE TABLE ${schema}.lease_ring_rotations (
    generation bigint PRIMARY KEY CHECK (generation >= 0),
    slot       int    NOT NULL,
    rotated_at timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE TABLE ${schema}.lease_ring_slots (slot int PRIMARY KEY);

CREATE TABLE ${schema}.claim_ring_state (
    singleton  boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    slot_count int NOT NULL CHECK (slot_count >= 2)
);
CREATE TABLE ${schema}.claim_ring_rotations (
    generation bigint PRIMARY KEY CHECK (generation >= 0),
    slot       int    NOT NULL,
    rotated_at timestamptz NOT NULL DEFAULT clock_timestamp()
);
-- Per-slot rescue cursors (docs/design/delivery-contract.md): stale sweep over (claimed_at, job_id, run_lease), row-local
-- deadline sweep over (deadline_at, job_id, run_lease), compact deadline sweep over (deadline_at, batch_id).
-- Reset to (-infinity, 0, 0) when the slot is truncated.
CREATE TABLE ${schema}.claim_ring_slots (
    slot                               int PRIMARY KEY,
    rescue_cursor_claimed_at           timestamptz NOT NULL DEFAULT '-infinity',
    rescue_cursor_job_id               bigint      NOT NULL DEFAULT 0,
    rescue_cursor_run_lease            bigint      NOT NULL DEFAULT 0,
    deadline_cursor_deadline_at        timestamptz NOT NULL DEFAULT '-infinity',
    deadline_cursor_job_id             bigint      NOT NULL DEFAULT 0,
    deadline_cursor_run_lease          bigint      NOT NULL DEFAULT 0,
    batch_deadline_cursor_deadline_at  timestamptz NOT NULL DEFAULT '-infinity',
    batch_deadline_cursor_batch_id     bigint      NOT NULL DEFAULT 0
) WITH (fillfactor = 70);

INSERT INTO ${schema}.queue_ring_state (slot_count) VALUES (${queue_slots});
INSERT INTO ${schema}.lease_ring_state (slot_count) VALUES (${lease_slots});
INSERT INTO ${schema}.claim_ring_state (slot_count) VALUES (${claim_slots});
INSERT INTO ${schema}.queue_ring_rotations (generation, slot) VALUES (0, 0);
INSERT INTO ${schema}.lease_ring_rotations (generation, slot) VALUES (0, 0);
INSERT INTO ${schema}.claim_ring_rotations (generation, slot) VALUES (0, 0);
INSERT INTO ${schema}.queue_ring_slots (slot) SELECT g FROM generate_series(0, ${queue_slots} - 1) g;
INSERT INTO ${schema}.lease_ring_slots (slot) SELECT g FROM generate_series(0, ${lease_slots} - 1) g;
INSERT INTO ${schema}.claim_ring_slots (slot) SELECT g FROM generate_series(0, ${claim_slots} - 1) g;

-- ---------------------------------------------------------------------------------------------------------------
-- Queue plane: PARTITION BY LIST (ready_slot), ring append-only
-- ---------------------------------------------------------------------------------------------------------------

-- Immutable runnable rows. run_lease is the run_lease of the previous attempt (0 for a new job); a claim emits
-- run_lease + 1. Primary key is unique because lane sequences never reset and a slot is truncated before reuse.
CREATE TABLE ${schema}.ready_entries (
    ready_slot       int         NOT NULL,
    ready_generation bigint      NOT NULL,
    job_id           bigint      NOT NULL,
    kind             text        NOT NULL,
    queue            text        NOT NULL,
    args             jsonb       NOT NULL CHECK (jsonb_typeof(args) = 'object'),
    priority         smallint    NOT NULL CHECK (priority BETWEEN 1 AND 4),
    attempt          smallint    NOT NULL DEFAULT 0 CHECK (attempt >= 0),
    run_lease        bigint      NOT NULL DEFAULT 0 CHECK (run_lease >= 0),
    max_attempts     smallint    NOT NULL DEFAULT 25 CHECK (max_attempts BETWEEN 1 AND 1000),
    lane_seq         bigint      NOT NULL,
    enqueue_shard    smallint    NOT NULL DEFAULT 0,
    run_at           timestamptz NOT NULL,
    attempted_at     timestamptz,
    created_at       timestamptz NOT NULL,
    unique_key       bytea,
    unique_states    text,
    payload          jsonb,
    -- Names: 1..128 characters of [A-Za-z0-9_.:-], starting with a letter or digit (mirrors NewJob).
    CONSTRAINT ready_entries_queue_name CHECK (queue ~ '^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$'),
    CONSTRAINT ready_entries_kind_name CHECK (kind ~ '^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$'),
    -- The engine's args limit is configurable (default 256 KiB, at most 64 MiB): the database backs the ceiling.
    -- pg_column_size reads the stored size, so the check costs no re-serialization. run_at bounds mirror NewJob.
    CONSTRAINT ready_entries_args_size CHECK (pg_column_size(args) <= 67108864),
    CONSTRAINT ready_entries_run_at CHECK (run_at >= '2000-01-01' AND run_at < '2200-01-01'),
    PRIMARY KEY (ready_slot, queue, priority, enqueue_shard, lane_seq)
) PARTITION BY LIST (ready_slot);

-- Contiguous committed runs of one lane, used by claim to route the cursor to its slot/generation.
CREATE TABLE ${schema}.ready_segments (
    ready_slot       int         NOT NULL,
    ready_generation bigint      NOT NULL,
    queue            text        NOT NULL,
    priority         smallint    NOT NULL,
    enqueue_shard    smallint    NOT NULL,
    first_lane_seq   bigint      NOT NULL,
    next_lane_seq    bigint      NOT NULL,
    first_run_at     timestamptz NOT NULL,
    created_at       timestamptz NOT NULL,
    CHECK (first_lane_seq < next_lane_seq),
    PRIMARY KEY (ready_slot, ready_generation, queue, priority, enqueue_shard, first_lane_seq)
) PARTITION BY LIST (ready_slot);

-- "This ready lane position is dead" (cancel of an available job), instead of deleting the immutable row.
CREATE TABLE ${schema}.ready_tombstones (
    ready_slot       int         NOT NULL,
    ready_generation bigint      NOT NULL,
    queue            text        NOT NULL,
    priority         smallint    NOT NULL,
    enqueue_shard    smallint    NOT NULL,
    lane_seq         bigint      NOT NULL,
    job_id           bigint      NOT NULL,
    tombstoned_at    timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (ready_slot, queue, priority, enqueue_shard, lane_seq, ready_generation)
) PARTITION BY LIST (ready_slot);

-- Claim-attempt evidence: "these lane positions already emitted run_lease + 1". It lives in the ready slot so
-- recovering a lost cursor advance never reads the claim ring (docs/design/delivery-contract.md).
CREATE TABLE ${schema}.ready_claim_attempt_batches (
    ready_slot       int            NOT NULL,
    batch_id         bigint         NOT NULL DEFAULT nextval('${schema}.ready_claim_attempt_batch_id_seq'),
    ready_generation bigint         NOT NULL,
    queue            text           NOT NULL,
    priority         smallint       NOT NULL,
    enqueue_shard    smallint       NOT NULL,
    claim_slot       int,
    first_lane_seq   bigint         NOT NULL,
    next_lane_seq    bigint         NOT NULL,
    claimed_count    int            NOT NULL CHECK (claimed_count > 0),
    lane_ranges      int8multirange NOT NULL,
    claimed_at       timestamptz    NOT NULL,
    CHECK (first_lane_seq < next_lane_seq),
    PRIMARY KEY (ready_slot, batch_id)
) PARTITION BY LIST (ready_slot);

-- Narrow terminal rows (failed, cancelled, general-path completions). Body columns are NULL when the retained
-- ready row can hydrate them; rows with no ready backing are "wide" with lane_seq = -job_id.
CREATE TABLE ${schema}.done_entries (
    ready_slot       int         NOT NULL,
    ready_generation bigint      NOT NULL,
    job_id           bigint      NOT NULL,
    kind             text        NOT NULL,
    queue            text        NOT NULL,
    state            ${schema}.job_state NOT NULL,
    priority         smallint    NOT NULL,
    attempt          smallint    NOT NULL,
    run_lease        bigint      NOT NULL,
    lane_seq         bigint      NOT NULL,
    enqueue_shard    smallint    NOT NULL,
    attempted_at     timestamptz,
    finalized_at     timestamptz NOT NULL,
    args             jsonb,
    max_attempts     smallint,
    run_at           timestamptz,
    created_at       timestamptz,
    unique_key       bytea,
    unique_states    text,
    payload          jsonb,
    PRIMARY KEY (ready_slot, queue, priority, enqueue_shard, lane_seq)
) PARTITION BY LIST (ready_slot);

-- Compact successful terminal history: one row per completion batch group. No GIN on job_ids (docs/design/storage-planes.md).
CREATE TABLE ${schema}.receipt_completion_batches (
    ready_slot       int           NOT NULL,
    batch_id         bigint        NOT NULL DEFAULT nextval('${schema}.receipt_completion_batch_id_seq'),
    ready_generation bigint        NOT NULL,
    claim_slot       int           NOT NULL,
    queue            text          NOT NULL,
    priority         smallint      NOT NULL,
    enqueue_shard    smallint      NOT NULL,
    completed_count  int           NOT NULL CHECK (completed_count > 0),
    job_ids          bigint[]      NOT NULL,
    run_leases       bigint[]      NOT NULL,
    lane_seqs        bigint[]      NOT NULL,
    attempts         smallint[]    NOT NULL,
    attempted_ats    timestamptz[] NOT NULL,
    finalized_at     timestamptz   NOT NULL,
    CHECK (cardinality(job_ids) = completed_count AND cardinality(run_leases) = completed_count
       AND cardinality(lane_seqs) = completed_count AND cardinality(attempts) = completed_count
       AND cardinality(attempted_ats) = completed_count),
    PRIMARY KEY (ready_slot, batch_id)
) PARTITION BY LIST (ready_slot);

-- Cold "hide this compact completed item" ledger (admin delete of terminal history).
CREATE TABLE ${schema}.receipt_completion_tombstones (
    ready_slot       int         NOT NULL,
    ready_generation bigint      NOT NULL,
    job_id           bigint      NOT NULL,
    run_lease        bigint      NOT NULL,
    queue            text        NOT NULL,
    priority         smallint    NOT NULL,
    enqueue_shard    smallint    NOT NULL,
    lane_seq         bigint      NOT NULL,
    deleted_at       timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (ready_slot, job_id, run_lease)
) PARTITION BY LIST (ready_slot);

-- Signed count deltas for done_entries mutations only (compact batches are counted directly).
CREATE TABLE ${schema}.queue_terminal_count_deltas (
    ready_slot       int         NOT NULL,
    ready_generation bigint      NOT NULL,
    queue            text        NOT NULL,
    priority         smallint    NOT NULL,
    enqueue_shard    smallint    NOT NULL,
    counter_bucket   smallint    NOT NULL,
    terminal_delta   bigint      NOT NULL CHECK (terminal_delta <> 0),
    recorded_at      timestamptz NOT NULL DEFAULT clock_timestamp()
) PARTITION BY LIST (ready_slot);

-- Cold counter tables fed by folds (docs/design/maintenance.md).
CREATE TABLE ${schema}.queue_terminal_live_counts (
    ready_slot          int      NOT NULL,
    queue               text     NOT NULL,
    priority            smallint NOT NULL,
    enqueue_shard       smallint NOT NULL,
    counter_bucket      smallint NOT NULL,
    live_terminal_count bigint   NOT NULL DEFAULT 0,
    PRIMARY KEY (ready_slot, queue, priority, enqueue_shard, counter_bucket)
);
CREATE TABLE ${schema}.queue_terminal_rollups (
    queue                  text     NOT NULL,
    priority               smallint NOT NULL,
    pruned_completed_count bigint   NOT NULL DEFAULT 0,
    pruned_failed_count    bigint   NOT NULL DEFAULT 0,
    PRIMARY KEY (queue, priority)
);
CREATE TABLE ${schema}.queue_terminal_rollup_deltas (
    queue                  text     NOT NULL,
    priority               smallint NOT NULL,
    pruned_completed_delta bigint   NOT NULL DEFAULT 0,
    pruned_failed_delta    bigint   NOT NULL DEFAULT 0,
    recorded_at            timestamptz NOT NULL DEFAULT clock_timestamp()
);

-- ---------------------------------------------------------------------------------------------------------------
-- Backlog and hold tables (plain, row vacuum; bounded by backlog and retention, not throughput)
-- ---------------------------------------------------------------------------------------------------------------

CREATE TABLE ${schema}.deferred_jobs (
    job_id        bigint      PRIMARY KEY,
    kind          text        NOT NULL,
    queue         text        NOT NULL,
    args          jsonb       NOT NULL CHECK (jsonb_typeof(args) = 'object'),
    state         ${schema}.job_state NOT NULL CHECK (state IN ('scheduled', 'retryable')),
    priority      smallint    NOT NULL CHECK (priority BETWEEN 1 AND 4),
    attempt       smallint    NOT NULL DEFAULT 0 CHECK (attempt >= 0),
    run_lease     bigint      NOT NULL DEFAULT 0 CHECK (run_lease >= 0),
    max_attempts  smallint    NOT NULL DEFAULT 25 CHECK (max_attempts BETWEEN 1 AND 1000),
    run_at        timestamptz NOT NULL,
    attempted_at  timestamptz,
    finalized_at  timestamptz,
    created_at    timestamptz NOT NULL,
    unique_key    bytea,
    unique_states text,
    payload       jsonb,
    -- The same name, size and run_at limits as ready_entries.
    CONSTRAINT deferred_jobs_queue_name CHECK (queue ~ '^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$'),
    CONSTRAINT deferred_jobs_kind_name CHECK (kind ~ '^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$'),
    CONSTRAINT deferred_jobs_args_size CHECK (pg_column_size(args) <= 67108864),
    CONSTRAINT deferred_jobs_run_at CHECK (run_at >= '2000-01-01' AND run_at < '2200-01-01')
);
CREATE INDEX deferred_jobs_promotion_idx ON ${schema}.deferred_jobs (state, run_at, queue, priority, job_id);
CREATE INDEX deferred_jobs_unique_idx ON ${schema}.deferred_jobs (unique_key) WHERE unique_key IS NOT NULL;

CREATE TABLE ${schema}.dlq_entries (
    job_id             bigint      PRIMARY KEY,
    kind               text        NOT NULL,
    queue              text        NOT NULL,
    args               jsonb       NOT NULL,
    priority           smallint    NOT NULL,
    attempt            smallint    NOT NULL,
    run_lease          bigint      NOT NULL,
    max_attempts       smallint    NOT NULL,
    run_at             timestamptz,
    attempted_at       timestamptz,
    created_at         timestamptz NOT NULL,
    unique_key         bytea,
    unique_states      text,
    payload            jsonb,
    dlq_reason         text        NOT NULL,
    dlq_at             timestamptz NOT NULL DEFAULT clock_timestamp(),
    original_run_lease bigint      NOT NULL
);
CREATE INDEX dlq_entries_queue_idx ON ${schema}.dlq_entries (queue, dlq_at DESC);

CREATE TABLE ${schema}.job_unique_claims (
    unique_key bytea  PRIMARY KEY,
    job_id     bigint NOT NULL
);

-- ---------------------------------------------------------------------------------------------------------------
-- Execution plane: materialized leases (lease ring, mutable, truncated with their slot) and lazy attempt_state
-- ---------------------------------------------------------------------------------------------------------------

CREATE TABLE ${schema}.leases (
    lease_slot          int         NOT NULL,
    lease_generation    bigint      NOT NULL,
    ready_slot          int         NOT NULL,
    ready_generation    bigint      NOT NULL,
    job_id              bigint      NOT NULL,
    queue               text        NOT NULL,
    state               ${schema}.job_state NOT NULL CHECK (state IN ('running', 'waiting_external')),
    priority            smallint    NOT NULL,
    attempt             smallint    NOT NULL,
    run_lease           bigint      NOT NULL,
    max_attempts        smallint    NOT NULL,
    lane_seq            bigint      NOT NULL,
    enqueue_shard       smallint    NOT NULL,
    heartbeat_at        timestamptz,
    deadline_at         timestamptz,
    attempted_at        timestamptz,
    callback_id         uuid,
    callback_timeout_at timestamptz,
    -- The receipt the lease belongs to, so lease-side rescue can close it in the shape it was claimed in:
    -- batch_id 0 = row-local (lease_claims), otherwise the compact batch and 1-based index.
    claim_slot          int         NOT NULL,
    receipt_id          bigint      NOT NULL,
    batch_id            bigint      NOT NULL,
    batch_index         int         NOT NULL,
    PRIMARY KEY (lease_slot, queue, priority, enqueue_shard, lane_seq)
) PARTITION BY LIST (lease_slot);

-- Created at the first heartbeat/progress flush of a long attempt; short jobs never get one.
CREATE TABLE ${schema}.attempt_state (
    job_id               bigint      NOT NULL,
    run_lease            bigint      NOT NULL,
    heartbeat_at         timestamptz,
    progress             jsonb,
    callback_filter      text,
    callback_on_complete text,
    callback_on_fail     text,
    callback_transform   text,
    callback_result      jsonb,
    updated_at           timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (job_id, run_lease)
) WITH (fillfactor = 80, autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 200);

-- ---------------------------------------------------------------------------------------------------------------
-- Receipt plane: PARTITION BY LIST (claim_slot). "Open" = claimed and no closure evidence; never stored.
-- ---------------------------------------------------------------------------------------------------------------

-- Compact claim: one row per claim call per lane, all items share claimed_at and deadline_at.
CREATE TABLE ${schema}.lease_claim_batches (
    claim_slot       int            NOT NULL,
    batch_id         bigint         NOT NULL DEFAULT nextval('${schema}.lease_claim_batch_id_seq'),
    ready_slot       int            NOT NULL,
    ready_generation bigint         NOT NULL,
    queue            text           NOT NULL,
    priority         smallint       NOT NULL,
    enqueue_shard    smallint       NOT NULL,
    claimed_count    int            NOT NULL CHECK (claimed_count > 0),
    job_ids          bigint[]       NOT NULL,
    run_leases       bigint[]       NOT NULL,
    receipt_ids      bigint[]       NOT NULL,
    lane_seqs        bigint[]       NOT NULL,
    attempts         smallint[]     NOT NULL,
    max_attempts     smallint[]     NOT NULL,
    receipt_ranges   int8multirange NOT NULL,
    deadline_at      timestamptz,
    claimed_at       timestamptz    NOT NULL,
    CHECK (cardinality(job_ids) = claimed_count AND cardinality(run_leases) = claimed_count
       AND cardinality(receipt_ids) = claimed_count AND cardinality(lane_seqs) = claimed_count
       AND cardinality(attempts) = claimed_count AND cardinality(max_attempts) = claimed_count),
    PRIMARY KEY (claim_slot, batch_id)
) PARTITION BY LIST (claim_slot);

-- Row-local claims: only for attempts that materialize a mutable lease (docs/design/storage-planes.md).
CREATE TABLE ${schema}.lease_claims (
    claim_slot       int         NOT NULL,
    job_id           bigint      NOT NULL,
    run_lease        bigint      NOT NULL,
    receipt_id       bigint      NOT NULL,
    ready_slot       int         NOT NULL,
    ready_generation bigint      NOT NULL,
    queue            text        NOT NULL,
    priority         smallint    NOT NULL,
    enqueue_shard    smallint    NOT NULL,
    lane_seq         bigint      NOT NULL,
    attempt          smallint    NOT NULL,
    max_attempts     smallint    NOT NULL,
    claimed_at       timestamptz NOT NULL,
    materialized_at  timestamptz,
    closed_at        timestamptz,
    deadline_at      timestamptz,
    PRIMARY KEY (claim_slot, job_id, run_lease)
) PARTITION BY LIST (claim_slot);

CREATE TABLE ${schema}.lease_claim_closures (
    claim_slot int         NOT NULL,
    job_id     bigint      NOT NULL,
    run_lease  bigint      NOT NULL,
    outcome    text        NOT NULL,
    closed_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (claim_slot, job_id, run_lease)
) PARTITION BY LIST (claim_slot);

-- Compact closure: membership of a receipt id in receipt_ranges closes it. Exactly one closure per receipt.
CREATE TABLE ${schema}.lease_claim_closure_batches (
    claim_slot       int            NOT NULL,
    batch_id         bigint         NOT NULL DEFAULT nextval('${schema}.lease_claim_closure_batch_id_seq'),
    ready_slot       int,
    ready_generation bigint,
    outcome          text           NOT NULL,
    closed_count     int            NOT NULL CHECK (closed_count > 0),
    receipt_ids      bigint[]       NOT NULL,
    receipt_ranges   int8multirange NOT NULL,
    closed_at        timestamptz    NOT NULL,
    CHECK (cardinality(receipt_ids) = closed_count),
    PRIMARY KEY (claim_slot, batch_id)
) PARTITION BY LIST (claim_slot);

-- ---------------------------------------------------------------------------------------------------------------
-- Partition children and their indexes. Indexes are per child so each slot truncates with its own indexes.
-- ---------------------------------------------------------------------------------------------------------------
DO $$
DECLARE
    s int;
BEGIN
    FOR s IN 0 .. ${queue_slots} - 1 LOOP
        EXECUTE format('CREATE TABLE %s.%I PARTITION OF %s.ready_entries FOR VALUES IN (%s)', '${schema}', 'ready_entries_' || s, '${schema}', s);
        EXECUTE format('CREATE INDEX %I ON %s.%I (job_id)', 'ready_entries_' || s || '_job_idx', '${schema}', 'ready_entries_' || s);

        EXECUTE format('CREATE TABLE %s.%I PARTITION OF %s.ready_segments FOR VALUES IN (%s)', '${schema}', 'ready_segments_' || s, '${schema}', s);
        EXECUTE format('CREATE INDEX %I ON %s.%I (queue, priority, enqueue_shard, next_lane_seq, first_lane_seq)', 'ready_segments_' || s || '_lane_idx', '${schema}', 'ready_segments_' || s);

        EXECUTE format('CREATE TABLE %s.%I PARTITION OF %s.ready_tombstones FOR VALUES IN (%s)', '${schema}', 'ready_tombstones_' || s, '${schema}', s);
        EXECUTE format('CREATE INDEX %I ON %s.%I (job_id)', 'ready_tombstones_' || s || '_job_idx', '${schema}', 'ready_tombstones_' || s);

        EXECUTE format('CREATE TABLE %s.%I PARTITION OF %s.ready_claim_attempt_batches FOR VALUES IN (%s)', '${schema}', 'ready_claim_attempt_batches_' || s, '${schema}', s);
        EXECUTE format('CREATE INDEX %I ON %s.%I (ready_generation, queue, priority, enqueue_shard, next_lane_seq, first_lane_seq)', 'ready_claim_attempt_batches_' || s || '_lane_idx', '${schema}', 'ready_claim_attempt_batches_' || s);

        EXECUTE format('CREATE TABLE %s.%I PARTITION OF %s.done_entries FOR VALUES IN (%s)', '${schema}', 'done_entries_' || s, '${schema}', s);
        EXECUTE format('CREATE INDEX %I ON %s.%I (job_id)', 'done_entries_' || s || '_job_idx', '${schema}', 'done_entries_' || s);
        EXECUTE format('CREATE INDEX %I ON %s.%I (queue) WHERE state = ''failed''', 'done_entries_' || s || '_failed_idx', '${schema}', 'done_entries_' || s);

        EXECUTE format('CREATE TABLE %s.%I PARTITION OF %s.receipt_completion_batches FOR VALUES IN (%s)', '${schema}', 'receipt_completion_batches_' || s, '${schema}', s);
        EXECUTE format('CREATE INDEX %I ON %s.%I (ready_generation, queue, priority, enqueue_shard)', 'receipt_completion_batches_' || s || '_lane_idx', '${schema}', 'receipt_completion_batches_' || s);

        EXECUTE format('CREATE TABLE %s.%I PARTITION OF %s.receipt_completion_tombstones FOR VALUES IN (%s)', '${schema}', 'receipt_completion_tombstones_' || s, '${schema}', s);
        EXECUTE format('CREATE TABLE %s.%I PARTITION OF %s.queue_terminal_count_deltas FOR VALUES IN (%s)', '${schema}', 'queue_terminal_count_deltas_' || s, '${schema}', s);
    END LOOP;

    FOR s IN 0 .. ${lease_slots} - 1 LOOP
        EXECUTE format('CREATE TABLE %s.%I PARTITION OF %s.leases FOR VALUES IN (%s)', '${schema}', 'leases_' || s, '${schema}', s);
        EXECUTE format('CREATE INDEX %I ON %s.%I (ready_slot, ready_generation)', 'leases_' || s || '_ready_idx', '${schema}', 'leases_' || s);
        EXECUTE format('CREATE INDEX %I ON %s.%I (job_id, run_lease)', 'leases_' || s || '_attempt_idx', '${schema}', 'leases_' || s);
        EXECUTE format('CREATE INDEX %I ON %s.%I (callback_id) WHERE callback_id IS NOT NULL', 'leases_' || s || '_callback_idx', '${schema}', 'leases_' || s);
        EXECUTE format('CREATE INDEX %I ON %s.%I (state, deadline_at)', 'leases_' || s || '_deadline_idx', '${schema}', 'leases_' || s);
        EXECUTE format('CREATE INDEX %I ON %s.%I (state, callback_timeout_at)', 'leases_' || s || '_cbtimeout_idx', '${schema}', 'leases_' || s);
    END LOOP;

    FOR s IN 0 .. ${claim_slots} - 1 LOOP
        EXECUTE format('CREATE TABLE %s.%I PARTITION OF %s.lease_claim_batches FOR VALUES IN (%s)', '${schema}', 'lease_claim_batches_' || s, '${schema}', s);
        EXECUTE format('CREATE INDEX %I ON %s.%I USING gist (receipt_ranges)', 'lease_claim_batches_' || s || '_ranges_idx', '${schema}', 'lease_claim_batches_' || s);
        EXECUTE format('CREATE INDEX %I ON %s.%I (ready_slot, ready_generation)', 'lease_claim_batches_' || s || '_ready_idx', '${schema}', 'lease_claim_batches_' || s);
        EXECUTE format('CREATE INDEX %I ON %s.%I (claimed_at, batch_id)', 'lease_claim_batches_' || s || '_stale_idx', '${schema}', 'lease_claim_batches_' || s);
        EXECUTE format('CREATE INDEX %I ON %s.%I (deadline_at, batch_id) WHERE deadline_at IS NOT NULL', 'lease_claim_batches_' || s || '_deadline_idx', '${schema}', 'lease_claim_batches_' || s);

        EXECUTE format('CREATE TABLE %s.%I PARTITION OF %s.lease_claims FOR VALUES IN (%s)', '${schema}', 'lease_claims_' || s, '${schema}', s);
        EXECUTE format('CREATE INDEX %I ON %s.%I (claimed_at, job_id, run_lease)', 'lease_claims_' || s || '_stale_idx', '${schema}', 'lease_claims_' || s);
        EXECUTE format('CREATE INDEX %I ON %s.%I (deadline_at, job_id, run_lease) WHERE deadline_at IS NOT NULL', 'lease_claims_' || s || '_deadline_idx', '${schema}', 'lease_claims_' || s);
        EXECUTE format('CREATE INDEX %I ON %s.%I (job_id, run_lease)', 'lease_claims_' || s || '_attempt_idx', '${schema}', 'lease_claims_' || s);
        EXECUTE format('CREATE INDEX %I ON %s.%I (ready_slot, ready_generation)', 'lease_claims_' || s || '_ready_idx', '${schema}', 'lease_claims_' || s);

        EXECUTE format('CREATE TABLE %s.%I PARTITION OF %s.lease_claim_closures FOR VALUES IN (%s)', '${schema}', 'lease_claim_closures_' || s, '${schema}', s);
        EXECUTE format('CREATE INDEX %I ON %s.%I (job_id, run_lease)', 'lease_claim_closures_' || s || '_attempt_idx', '${schema}', 'lease_claim_closures_' || s);

        EXECUTE format('CREATE TABLE %s.%I PARTITION OF %s.lease_claim_closure_batches FOR VALUES IN (%s)', '${schema}', 'lease_claim_closure_batches_' || s, '${schema}', s);
        EXECUTE format('CREATE INDEX %I ON %s.%I USING gist (receipt_ranges)', 'lease_claim_closure_batches_' || s || '_ranges_idx', '${schema}', 'lease_claim_closure_batches_' || s);
        EXECUTE format('CREATE INDEX %I ON %s.%I (ready_slot, ready_generation) WHERE ready_slot IS NOT NULL', 'lease_claim_closure_batches_' || s || '_ready_idx', '${schema}', 'lease_claim_closure_batches_' || s);
    END LOOP;
END
$$;

-- ---------------------------------------------------------------------------------------------------------------
-- Public terminal read surface: compact completions hydrated from their retained ready rows, plus narrow rows.
-- Terminal history lives as long as its queue-ring segment (docs/design/rings-and-proofs.md).
-- ---------------------------------------------------------------------------------------------------------------
CREATE VIEW ${schema}.terminal_jobs AS
SELECT i.job_id, r.kind, b.queue, b.priority, r.args, 'completed'::${schema}.job_state AS state, i.attempt, i.run_lease,
       r.max_attempts, i.attempted_at, b.finalized_at, r.run_at, r.created_at, r.payload,
       b.ready_slot, b.ready_generation, b.enqueue_shard, i.lane_seq
FROM ${schema}.receipt_completion_batches b
CROSS JOIN LATERAL unnest(b.job_ids, b.run_leases, b.lane_seqs, b.attempts, b.attempted_ats)
     AS i(job_id, run_lease, lane_seq, attempt, attempted_at)
JOIN ${schema}.ready_entries r
  ON r.ready_slot = b.ready_slot AND r.ready_generation = b.ready_generation AND r.queue = b.queue
 AND r.priority = b.priority AND r.enqueue_shard = b.enqueue_shard AND r.lane_seq = i.lane_seq AND r.job_id = i.job_id
WHERE NOT EXISTS (SELECT 1 FROM ${schema}.receipt_completion_tombstones t
                  WHERE t.ready_slot = b.ready_slot AND t.job_id = i.job_id AND t.run_lease = i.run_lease)
UNION ALL
SELECT d.job_id, d.kind, d.queue, d.priority, coalesce(d.args, r.args), d.state, d.attempt, d.run_lease,
       coalesce(d.max_attempts, r.max_attempts), d.attempted_at, d.finalized_at, coalesce(d.run_at, r.run_at),
       coalesce(d.created_at, r.created_at), coalesce(d.payload, r.payload),
       d.ready_slot, d.ready_generation, d.enqueue_shard, d.lane_seq
FROM ${schema}.done_entries d
LEFT JOIN ${schema}.ready_entries r
  ON r.ready_slot = d.ready_slot AND r.ready_generation = d.ready_generation AND r.queue = d.queue
 AND r.priority = d.priority AND r.enqueue_shard = d.enqueue_shard AND r.lane_seq = d.lane_seq;
