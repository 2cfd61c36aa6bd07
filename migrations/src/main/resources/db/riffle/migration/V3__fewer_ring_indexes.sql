-- Fewer indexes on ring children (issue #12, item 4; docs/design/maintenance.md, "What a prune costs").
-- Placeholders: ${schema} (quoted identifier), ${queue_slots}, ${claim_slots}. No function is defined here
-- (docs/adr/0007); the only function statements are the drops of section 4.
--
-- Every prune TRUNCATEs all children of one ring slot, and TRUNCATE builds a new, empty copy of every index of every
-- child, including the index of each child's TOAST table. Before PostgreSQL 17 each of those btree builds fsyncs its
-- new file before the statement goes on (wait event IO/DataFileImmediateSync), while the slot's ACCESS EXCLUSIVE
-- locks are held and in competition with every commit's WAL flush. An index nothing reads is paid for on every
-- insert and, once per prune, with an fsync. What is left after this file, and which statement needs each index, is
-- in docs/design/storage-planes.md ("Indexes of the ring children").
--
-- Per child, indexes (primary keys included) before -> after:
--   queue ring: ready_entries 2 -> 2, ready_segments 2 -> 1, ready_tombstones 2 -> 1,
--               ready_claim_attempt_batches 2 -> 1, done_entries 3 -> 1, receipt_completion_batches 2 -> 0,
--               receipt_completion_tombstones 1 -> 0, queue_terminal_count_deltas 0 -> 0: 14 -> 6 per slot;
--               TOAST tables (one index each) 8 -> 4.
--   claim ring: lease_claim_batches 5 -> 4, lease_claims 5 -> 3, lease_claim_closures 2 -> 1,
--               lease_claim_closure_batches 3 -> 2: 15 -> 10 per slot (two of them GiST, which PostgreSQL 15 builds
--               through shared buffers without an immediate fsync); TOAST tables 4 -> 2.
-- Index-file fsyncs per TRUNCATE, measured with strace on PostgreSQL 15: queue slot 22 -> 10, claim slot 17 -> 10.
--
-- Runs in one transaction and takes ACCESS EXCLUSIVE on every child of both rings (the TOAST step rewrites six
-- families, which are small: segments, tombstones, count deltas and row-local receipts). Migrate with the engines
-- stopped, or at a quiet moment: running engines queue behind it, and a deadlock with one makes it fail and roll back.

-- 1. Primary keys that no statement reads and no correctness rule relies on. Their only effect was uniqueness of
--    a key nobody looks up: batch ids come from sequences, segments cover lane positions whose uniqueness
--    ready_entries' own primary key already enforces in the same statement, and receipt_completion_tombstones has no
--    writer at all (the terminal_jobs view anti-joins it; on an empty table that needs no index). They are dropped
--    deliberately, not by accident: a future statement that needs one of these keys adds an index for it.
ALTER TABLE ${schema}.ready_segments DROP CONSTRAINT IF EXISTS ready_segments_pkey;
ALTER TABLE ${schema}.ready_claim_attempt_batches DROP CONSTRAINT IF EXISTS ready_claim_attempt_batches_pkey;
ALTER TABLE ${schema}.receipt_completion_batches DROP CONSTRAINT IF EXISTS receipt_completion_batches_pkey;
ALTER TABLE ${schema}.receipt_completion_tombstones DROP CONSTRAINT IF EXISTS receipt_completion_tombstones_pkey;
ALTER TABLE ${schema}.lease_claim_closure_batches DROP CONSTRAINT IF EXISTS lease_claim_closure_batches_pkey;

-- 2. Secondary indexes no statement needs (checked with EXPLAIN on a populated schema):
--    ready_tombstones_N_job_idx, done_entries_N_job_idx, done_entries_N_failed_idx: nothing looks tombstones or
--      narrow terminal rows up by job id or lists failed rows by queue (done rows are failures and cancels, a few);
--    receipt_completion_batches_N_lane_idx: no statement filters on (ready_generation, queue, priority, shard);
--      counts and prune read the whole child;
--    lease_claim_batches_N_stale_idx, lease_claims_N_stale_idx: the stale sweep sorts the union of compact items
--      and row-local claims and reads both children whole (the plan never used them; complete_compact did, as a
--      whole-index scan per item, which its new claim_slot predicate turns into a primary-key descent);
--    lease_claims_N_attempt_idx, lease_claim_closures_N_attempt_idx: every lookup by (job_id, run_lease) inside a
--      claim slot now names the slot and descends the primary key (claim_slot, job_id, run_lease); cancel_job's
--      search over all slots reads the row-local children whole, as it already read the compact ones.
DO $$
DECLARE
    s int;
BEGIN
    FOR s IN 0 .. ${queue_slots} - 1 LOOP
        EXECUTE format('DROP INDEX IF EXISTS %s.%I', '${schema}', 'ready_tombstones_' || s || '_job_idx');
        EXECUTE format('DROP INDEX IF EXISTS %s.%I', '${schema}', 'done_entries_' || s || '_job_idx');
        EXECUTE format('DROP INDEX IF EXISTS %s.%I', '${schema}', 'done_entries_' || s || '_failed_idx');
        EXECUTE format('DROP INDEX IF EXISTS %s.%I', '${schema}', 'receipt_completion_batches_' || s || '_lane_idx');
    END LOOP;
    FOR s IN 0 .. ${claim_slots} - 1 LOOP
        EXECUTE format('DROP INDEX IF EXISTS %s.%I', '${schema}', 'lease_claim_batches_' || s || '_stale_idx');
        EXECUTE format('DROP INDEX IF EXISTS %s.%I', '${schema}', 'lease_claims_' || s || '_stale_idx');
        EXECUTE format('DROP INDEX IF EXISTS %s.%I', '${schema}', 'lease_claims_' || s || '_attempt_idx');
        EXECUTE format('DROP INDEX IF EXISTS %s.%I', '${schema}', 'lease_claim_closures_' || s || '_attempt_idx');
    END LOOP;
END
$$;

-- 3. TOAST tables that can never hold a value. A table gets one (with its own btree index, rebuilt and fsynced by
--    every TRUNCATE) as soon as one column is variable-length and not STORAGE PLAIN. In these six families the only
--    such column is a queue name (at most 128 characters, checked where it enters: ready_entries) or a closure
--    outcome label, so their rows are always far below a page. PLAIN storage keeps them in the row, and the rewrite
--    forced by the USING clause recreates each child without a TOAST table. The families that can hold large values
--    keep theirs: ready_entries and done_entries (args, payload), ready_claim_attempt_batches (lane_ranges),
--    receipt_completion_batches, lease_claim_batches and lease_claim_closure_batches (arrays of up to 512 items).
ALTER TABLE ${schema}.ready_segments
    ALTER COLUMN queue SET STORAGE PLAIN, ALTER COLUMN queue TYPE text USING (queue || '');
ALTER TABLE ${schema}.ready_tombstones
    ALTER COLUMN queue SET STORAGE PLAIN, ALTER COLUMN queue TYPE text USING (queue || '');
ALTER TABLE ${schema}.receipt_completion_tombstones
    ALTER COLUMN queue SET STORAGE PLAIN, ALTER COLUMN queue TYPE text USING (queue || '');
ALTER TABLE ${schema}.queue_terminal_count_deltas
    ALTER COLUMN queue SET STORAGE PLAIN, ALTER COLUMN queue TYPE text USING (queue || '');
ALTER TABLE ${schema}.lease_claims
    ALTER COLUMN queue SET STORAGE PLAIN, ALTER COLUMN queue TYPE text USING (queue || '');
ALTER TABLE ${schema}.lease_claim_closures
    ALTER COLUMN outcome SET STORAGE PLAIN, ALTER COLUMN outcome TYPE text USING (outcome || '');

-- 4. Signature changes (docs/adr/0007): rotation takes its cadence bounds and prune the history retention floor
--    (R__60_ring.sql recreates both right after this file).
DROP FUNCTION IF EXISTS ${schema}.rotate_ring(text);
DROP FUNCTION IF EXISTS ${schema}.prune_ring(text, text, int);
