-- Tracing from enqueue to handler (docs/tracing.md): the enqueue functions take the trace context current at enqueue
-- as a last parameter (p_trace jsonb DEFAULT NULL) and store it in the job's engine-owned payload. No table changes:
-- payload jsonb exists on every table a job lives in. The old signatures are dropped here, before the repeatables
-- recreate the functions (docs/adr/0007, rule 3); a call with the old arguments still resolves, to the default.
-- Placeholders: ${schema}.
DROP FUNCTION IF EXISTS ${schema}.enqueue_jobs(text[], text[], jsonb[], smallint[], smallint[], timestamptz[]);
DROP FUNCTION IF EXISTS ${schema}.enqueue_unique_jobs(text[], text[], jsonb[], smallint[], smallint[], timestamptz[],
                                                      jsonb[], text[], bigint[], text[]);
DROP FUNCTION IF EXISTS ${schema}.place_new_jobs(bigint[], text[], text[], jsonb[], smallint[], smallint[],
                                                 timestamptz[], timestamptz);
