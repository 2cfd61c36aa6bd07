-- The same name rule in a form PostgreSQL checks about 20x faster (issue #12, docs/benchmarks.md "Session 18"). V1's
-- CHECKs spelled the length bound inside the pattern ('[...]{0,127}'). PostgreSQL's regex engine unrolls a bounded
-- repetition into one state per repeat and builds its automaton again on every match, so each check cost about
-- 5 us: two per enqueued job on ready_entries, 5-6 % of the server's CPU in a steady run (perf). Here the length is
-- a char_length bound and the pattern an unbounded '*': the same names pass (both classes are ASCII, so characters
-- are bytes), the same ones are refused, under the same constraint names (ValidationIT).
-- The ADDs validate the rows already there (ACCESS EXCLUSIVE for the scan, at most a ring's worth of rows).
ALTER TABLE ${schema}.ready_entries
    DROP CONSTRAINT ready_entries_queue_name,
    DROP CONSTRAINT ready_entries_kind_name,
    ADD CONSTRAINT ready_entries_queue_name CHECK (char_length(queue) <= 128 AND queue ~ '^[A-Za-z0-9][A-Za-z0-9_.:-]*$'),
    ADD CONSTRAINT ready_entries_kind_name CHECK (char_length(kind) <= 128 AND kind ~ '^[A-Za-z0-9][A-Za-z0-9_.:-]*$');

ALTER TABLE ${schema}.deferred_jobs
    DROP CONSTRAINT deferred_jobs_queue_name,
    DROP CONSTRAINT deferred_jobs_kind_name,
    ADD CONSTRAINT deferred_jobs_queue_name CHECK (char_length(queue) <= 128 AND queue ~ '^[A-Za-z0-9][A-Za-z0-9_.:-]*$'),
    ADD CONSTRAINT deferred_jobs_kind_name CHECK (char_length(kind) <= 128 AND kind ~ '^[A-Za-z0-9][A-Za-z0-9_.:-]*$');
