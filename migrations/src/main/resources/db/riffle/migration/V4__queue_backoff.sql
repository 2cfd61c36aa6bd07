-- Per-queue retry backoff (issue #13 item 5, docs/configuration.md#retry-backoff) and structured error history.
-- Placeholders: ${schema}. No function is defined here (docs/adr/0007); the drops below are signature changes whose
-- new definitions follow in R__40_close.sql.
--
-- queue_meta is the cold per-queue settings table every engine reads (docs/design/delivery-contract.md): an engine
-- records a queue's explicit QueueConfig.backoff here at start, as it does the DLQ policy (the last engine to start
-- wins), so every engine's retries and every rescue of the queue use one policy. All three columns NULL (the
-- default) keep the built-in backoff: 2^attempt s plus up to 25 % jitter, capped at 24 h.
--   delay after attempt n = least(cap, base * 2^(n - 1) * (1 + U[0, jitter]))
ALTER TABLE ${schema}.queue_meta
    ADD COLUMN backoff_base_ms bigint,
    ADD COLUMN backoff_cap_ms  bigint,
    ADD COLUMN backoff_jitter  double precision,
    -- The same limits QueueConfig checks: 1 ms .. 365 days, cap not below base, jitter a fraction.
    ADD CONSTRAINT queue_meta_backoff_whole CHECK ((backoff_base_ms IS NULL) = (backoff_cap_ms IS NULL)
                                                   AND (backoff_base_ms IS NULL) = (backoff_jitter IS NULL)),
    ADD CONSTRAINT queue_meta_backoff_range CHECK (backoff_base_ms BETWEEN 1 AND 31536000000
                                                   AND backoff_cap_ms BETWEEN backoff_base_ms AND 31536000000
                                                   AND backoff_jitter BETWEEN 0 AND 1);

-- Signature changes (docs/adr/0007): the backoff reads the queue's policy, and close_attempts takes each error's
-- exception class and stack trace next to its message, stored in the payload's error history.
DROP FUNCTION IF EXISTS ${schema}.retry_backoff(int);
DROP FUNCTION IF EXISTS ${schema}.close_attempts(int[], bigint[], int[], bigint[], bigint[], bigint[], text[], bigint[],
                                                 text[], boolean[], boolean[]);
