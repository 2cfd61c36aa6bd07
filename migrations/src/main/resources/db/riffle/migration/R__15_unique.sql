-- Unique jobs (docs/unique-jobs.md, docs/adr/0012): the key, the owner's liveness, enqueue with a key, cancel by
-- key and the sweep of released claims.
-- Repeatable migration (docs/adr/0007): functions only, each as CREATE OR REPLACE, re-applied by Flyway
-- whenever this file changes. Tables, types and indexes live in the versioned V__ files; a function whose
-- signature changes is dropped there first.
--
-- Nothing here is on the path of a job without a key: enqueue_jobs (R__20) never reads or writes
-- job_unique_claims, and neither do claims, completions, rescue or prune. A claim is released lazily: it names
-- its owner and the states in which the owner holds the key, and an enqueue that meets a claim whose owner is in
-- none of them (completed, failed, cancelled, in the DLQ, pruned) takes it over. So every path out of the states
-- releases the key, including the ones added later, without writing anything itself.

-- The key: SHA-256 over a canonical JSON array of what the options name. Always the kind; then either the explicit
-- key, or the queue and (optionally) the args, whole or the chosen top-level fields; then the period bucket
-- floor(epoch_ms(p_at) / period_ms) when a period is set. jsonb text output is canonical (keys sorted, one
-- spelling of whitespace), so field order in the args does not matter; a number keeps the digits it was given
-- (1 and 1.0 are different keys). A missing field and a null field are different keys.
--   p_fields: NULL = args not part of the key; JSON true = the whole args; a JSON array of names = those fields.
CREATE OR REPLACE FUNCTION ${schema}.unique_key_of(p_kind text, p_queue text, p_args jsonb, p_fields jsonb,
                                                   p_key text, p_period_ms bigint, p_at timestamptz)
RETURNS bytea
LANGUAGE sql STABLE AS $$
    SELECT sha256(convert_to(jsonb_build_array(
               'riffle.unique.1',
               p_kind,
               CASE WHEN p_key IS NOT NULL THEN jsonb_build_object('key', p_key)
                    ELSE jsonb_build_object('queue', p_queue, 'args',
                         CASE WHEN p_fields IS NULL OR jsonb_typeof(p_fields) = 'null' THEN NULL
                              WHEN jsonb_typeof(p_fields) = 'boolean' THEN p_args
                              ELSE (SELECT coalesce(jsonb_object_agg(f, p_args -> f), '{}'::jsonb)
                                      FROM jsonb_array_elements_text(p_fields) f
                                     WHERE p_args ? f) END) END,
               CASE WHEN p_period_ms IS NULL THEN NULL
                    ELSE floor(extract(epoch FROM p_at) * 1000 / p_period_ms)::bigint END)::text, 'UTF8'))
$$;

-- The live state of a job, as one snapshot (STABLE: every query below sees the snapshot of the calling
-- statement, so a job moving between tables while this runs is seen on one side only): 'scheduled' or
-- 'retryable' (deferred_jobs), 'available' (newest ready row, not claimed, not tombstoned), 'running' (that row's
-- claim is an open receipt, compact or row-local, waiting_external included). NULL when the job is in none of
-- them: completed, failed, cancelled, in the DLQ, pruned or unknown. Cold path (unique conflicts and cancel by
-- key): the running probe reads the claim batches of the ready row's slot and generation.
CREATE OR REPLACE FUNCTION ${schema}.unique_job_state(p_job_id bigint) RETURNS ${schema}.job_state
LANGUAGE plpgsql STABLE SET plan_cache_mode = force_custom_plan AS $$
DECLARE
    r record;
BEGIN
    SELECT d.state INTO r FROM ${schema}.deferred_jobs d WHERE d.job_id = p_job_id;
    IF FOUND THEN
        RETURN r.state;
    END IF;
    IF EXISTS (SELECT 1 FROM ${schema}.dlq_entries d WHERE d.job_id = p_job_id) THEN
        RETURN NULL;
    END IF;
    -- The job's latest ready row: every re-append (retry, release, promotion, rescue) carries a higher run_lease.
    SELECT re.ready_slot, re.ready_generation, re.queue, re.priority, re.enqueue_shard, re.lane_seq, re.run_lease,
           h.seq_name
      INTO r
      FROM ${schema}.ready_entries re
      JOIN ${schema}.queue_claim_heads h
        ON h.queue = re.queue AND h.priority = re.priority AND h.enqueue_shard = re.enqueue_shard
     WHERE re.job_id = p_job_id
     ORDER BY re.run_lease DESC, re.ready_generation DESC, re.lane_seq DESC
     LIMIT 1;
    IF NOT FOUND THEN
        RETURN NULL;
    END IF;
    IF EXISTS (SELECT 1 FROM ${schema}.ready_tombstones t
                WHERE t.ready_slot = r.ready_slot AND t.ready_generation = r.ready_generation
                  AND t.queue = r.queue AND t.priority = r.priority AND t.enqueue_shard = r.enqueue_shard
                  AND t.lane_seq = r.lane_seq) THEN
        RETURN NULL;
    END IF;
    IF r.lane_seq >= ${schema}.seq_next(r.seq_name)
       AND NOT EXISTS (SELECT 1 FROM ${schema}.ready_claim_attempt_batches e
                        WHERE e.ready_slot = r.ready_slot AND e.ready_generation = r.ready_generation
                          AND e.queue = r.queue AND e.priority = r.priority AND e.enqueue_shard = r.enqueue_shard
                          AND e.first_lane_seq <= r.lane_seq AND e.next_lane_seq > r.lane_seq
                          AND e.lane_ranges @> r.lane_seq) THEN
        RETURN 'available';
    END IF;
    IF EXISTS (SELECT 1
                 FROM ${schema}.lease_claim_batches b
                CROSS JOIN LATERAL unnest(b.job_ids, b.run_leases, b.receipt_ids) AS i(jid, rl, rid)
                WHERE b.ready_slot = r.ready_slot AND b.ready_generation = r.ready_generation
                  AND b.job_ids @> ARRAY[p_job_id] AND i.jid = p_job_id AND i.rl = r.run_lease + 1
                  AND NOT EXISTS (SELECT 1 FROM ${schema}.lease_claim_closure_batches c
                                   WHERE c.claim_slot = b.claim_slot AND c.receipt_ranges @> i.rid))
       OR EXISTS (SELECT 1 FROM ${schema}.lease_claims c
                   WHERE c.ready_slot = r.ready_slot AND c.ready_generation = r.ready_generation
                     AND c.job_id = p_job_id AND c.run_lease = r.run_lease + 1 AND c.closed_at IS NULL
                     AND NOT EXISTS (SELECT 1 FROM ${schema}.lease_claim_closures x
                                      WHERE x.claim_slot = c.claim_slot AND x.job_id = c.job_id
                                        AND x.run_lease = c.run_lease)) THEN
        RETURN 'running';
    END IF;
    RETURN NULL;
END
$$;

-- Whether the claim's owner still holds its key.
CREATE OR REPLACE FUNCTION ${schema}.unique_claim_held(p_job_id bigint, p_states ${schema}.job_state[]) RETURNS boolean
LANGUAGE sql STABLE AS $$
    SELECT coalesce(${schema}.unique_job_state(p_job_id) = ANY (p_states), false)
$$;

-- Enqueue a batch in which some rows carry unique options (the engine sends a batch here only when one does; a
-- batch without keys goes to enqueue_jobs and never touches job_unique_claims). Arrays are positionally aligned;
-- a row with p_states NULL has no key. Returns one row per input row, in input order: the new job's id, or for a
-- duplicate the id of the job that holds the key, with duplicate = true. p_trace: the batch's trace context
-- (place_new_jobs, R__20_enqueue.sql).
--
-- Exactly one job per key, whatever the concurrency: the claim is INSERT ... ON CONFLICT DO NOTHING, which waits
-- for a producer whose insert of the same key is in flight (its commit makes ours a conflict, its rollback lets
-- ours in). On conflict the owner is read in a new statement (a fresh READ COMMITTED snapshot); if the owner still
-- holds the key this row is a duplicate; if not, the claim is taken over by an UPDATE guarded by the owner's id,
-- so of two producers taking over the same released claim, the second waits for the first's row lock and then
-- finds a different owner (or, if the first rolled back, takes it over itself). Keys are claimed in key order, so
-- two batches with the same keys in a different order cannot deadlock on each other's in-flight claims; the
-- claims come before the lane locks of the append.
CREATE OR REPLACE FUNCTION ${schema}.enqueue_unique_jobs(p_queues text[], p_kinds text[], p_args jsonb[],
                                                         p_priorities smallint[], p_max_attempts smallint[],
                                                         p_run_ats timestamptz[], p_fields jsonb[], p_keys text[],
                                                         p_periods_ms bigint[], p_states text[],
                                                         p_trace jsonb DEFAULT NULL)
RETURNS TABLE (job_id bigint, duplicate boolean)
LANGUAGE plpgsql VOLATILE SET plan_cache_mode = force_custom_plan AS $$
#variable_conflict use_column
DECLARE
    v_now    timestamptz := now();
    v_n      int := cardinality(p_kinds);
    v_ids    bigint[];
    v_dup    boolean[];
    v_mine   bigint[] := '{}';
    v_states ${schema}.job_state[];
    v_owner  record;
    v_done   boolean;
    k        record;
BEGIN
    SELECT array_agg(nextval('${schema}.job_id_seq') ORDER BY g) INTO v_ids FROM generate_series(1, v_n) g;
    v_dup := array_fill(false, ARRAY[v_n]);

    FOR k IN
        SELECT x.ord::int AS i,
               ${schema}.unique_key_of(x.kind, x.queue, x.args, x.fields, x.key, x.period_ms, v_now) AS key
          FROM unnest(p_kinds, p_queues, p_args, p_fields, p_keys, p_periods_ms, p_states)
               WITH ORDINALITY AS x(kind, queue, args, fields, key, period_ms, states, ord)
         WHERE x.states IS NOT NULL
         ORDER BY 2, 1
    LOOP
        v_states := p_states[k.i]::${schema}.job_state[];
        v_done := false;
        FOR v_try IN 1 .. 50 LOOP
            INSERT INTO ${schema}.job_unique_claims AS c (unique_key, job_id, states, kind, claimed_at)
            VALUES (k.key, v_ids[k.i], v_states, p_kinds[k.i], clock_timestamp())
            ON CONFLICT (unique_key) DO NOTHING;
            IF FOUND THEN
                v_mine := v_mine || v_ids[k.i];
                v_done := true;
                EXIT;
            END IF;
            SELECT c.job_id, c.states INTO v_owner FROM ${schema}.job_unique_claims c WHERE c.unique_key = k.key;
            CONTINUE WHEN NOT FOUND;  -- swept or cancelled meanwhile: insert again
            -- An owner claimed earlier in this batch has no job row yet, and holds its key by construction.
            IF v_owner.job_id = ANY (v_mine) OR ${schema}.unique_claim_held(v_owner.job_id, v_owner.states) THEN
                v_ids[k.i] := v_owner.job_id;
                v_dup[k.i] := true;
                v_done := true;
                EXIT;
            END IF;
            UPDATE ${schema}.job_unique_claims c
               SET job_id = v_ids[k.i], states = v_states, kind = p_kinds[k.i], claimed_at = clock_timestamp()
             WHERE c.unique_key = k.key AND c.job_id = v_owner.job_id;
            IF FOUND THEN
                v_mine := v_mine || v_ids[k.i];
                v_done := true;
                EXIT;
            END IF;
        END LOOP;
        IF NOT v_done THEN
            RAISE EXCEPTION 'enqueue_unique_jobs: the claim of a unique key kept changing hands' USING ERRCODE = '40001';
        END IF;
    END LOOP;

    -- The rows that are not duplicates go where enqueue_jobs puts new jobs (place_new_jobs, R__20_enqueue.sql).
    PERFORM ${schema}.place_new_jobs(ARRAY(SELECT CASE WHEN v_dup[g] THEN NULL ELSE v_ids[g] END
                                             FROM generate_series(1, v_n) g ORDER BY g),
                                     p_queues, p_kinds, p_args, p_priorities, p_max_attempts, p_run_ats, v_now,
                                     p_trace);

    RETURN QUERY SELECT v_ids[g], v_dup[g] FROM generate_series(1, v_n) g ORDER BY g;
END
$$;

-- Cancel the job holding a key (admin). The key is released in the same transaction (the claim row is deleted),
-- whatever cancel_job found. Returns the owner's id (NULL when no claim) and cancel_job's word, or 'not_found'
-- when the owner no longer holds the key.
CREATE OR REPLACE FUNCTION ${schema}.cancel_unique(p_key bytea)
RETURNS TABLE (job_id bigint, result text)
LANGUAGE plpgsql VOLATILE SET plan_cache_mode = force_custom_plan AS $$
#variable_conflict use_column
DECLARE
    v_owner record;
    v_res   text := 'not_found';
BEGIN
    SELECT c.job_id, c.states INTO v_owner FROM ${schema}.job_unique_claims c WHERE c.unique_key = p_key;
    IF NOT FOUND THEN
        RETURN QUERY SELECT NULL::bigint, 'not_found'::text;
        RETURN;
    END IF;
    IF ${schema}.unique_claim_held(v_owner.job_id, v_owner.states) THEN
        v_res := ${schema}.cancel_job(v_owner.job_id);
    END IF;
    DELETE FROM ${schema}.job_unique_claims c WHERE c.unique_key = p_key AND c.job_id = v_owner.job_id;
    RETURN QUERY SELECT v_owner.job_id, v_res;
END
$$;

-- Delete up to p_limit claims whose owner no longer holds the key, scanning keys after p_after (NULL: from the
-- start). Keeps the table the size of the live unique backlog when keys are not reused (period buckets, one-off
-- keys). Returns the last key scanned (NULL when the scan reached the end: start again from NULL) and how many
-- claims were released. A claim taken over between the read and the delete is kept (the delete is guarded by the
-- owner's id).
CREATE OR REPLACE FUNCTION ${schema}.sweep_unique_claims(p_after bytea, p_limit int)
RETURNS TABLE (last_key bytea, released int)
LANGUAGE plpgsql VOLATILE SET plan_cache_mode = force_custom_plan AS $$
#variable_conflict use_column
DECLARE
    v_last  bytea;
    v_count int;
    v_n     int;
BEGIN
    WITH page AS MATERIALIZED (
        SELECT c.unique_key, c.job_id, c.states
          FROM ${schema}.job_unique_claims c
         WHERE p_after IS NULL OR c.unique_key > p_after
         ORDER BY c.unique_key
         LIMIT p_limit
    ),
    gone AS (
        DELETE FROM ${schema}.job_unique_claims c
         USING page p
         WHERE c.unique_key = p.unique_key AND c.job_id = p.job_id
           AND NOT ${schema}.unique_claim_held(p.job_id, p.states)
        RETURNING 1
    )
    SELECT (SELECT p.unique_key FROM page p ORDER BY p.unique_key DESC LIMIT 1), (SELECT count(*) FROM page),
           (SELECT count(*) FROM gone)
      INTO v_last, v_n, v_count;
    RETURN QUERY SELECT CASE WHEN v_n < p_limit THEN NULL ELSE v_last END, v_count;
END
$$;
