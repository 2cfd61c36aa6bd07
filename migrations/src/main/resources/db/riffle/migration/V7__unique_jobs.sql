-- Unique jobs (docs/unique-jobs.md, docs/adr/0012). job_unique_claims is a plain backlog/control table (V1): one row
-- per unique key, naming the job that owns it. It is written only by enqueues of jobs that ask for uniqueness (and
-- by cancel-by-key and the claim sweep), never by the enqueue of other jobs, claims or completions. A claim stays
-- while its job is in one of the claim's states; it is released lazily: an enqueue that meets a claim whose job
-- has left those states takes it over (docs/adr/0012 says why the terminal paths do not delete it).
ALTER TABLE ${schema}.job_unique_claims
    -- The states in which the owning job holds the key; a subset of the live states.
    ADD COLUMN states     ${schema}.job_state[] NOT NULL DEFAULT '{scheduled,available,running,retryable}'
        CONSTRAINT job_unique_claims_states CHECK (cardinality(states) > 0
            AND states <@ '{scheduled,available,running,retryable}'::${schema}.job_state[]),
    -- For operators reading the table; the key itself is a SHA-256 digest (unique_key_of).
    ADD COLUMN kind       text,
    ADD COLUMN claimed_at timestamptz NOT NULL DEFAULT clock_timestamp();

-- Backlog-class vacuum knobs (docs/design): small heap, INSERT/UPDATE/DELETE at the rate of unique enqueues.
ALTER TABLE ${schema}.job_unique_claims SET (autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 200);
