-- Hot-path statements. Each is one round trip; the work happens in functions installed by the migrations.

-- name: enqueue
SELECT j AS job_id
  FROM ${schema}.enqueue_jobs($1::text[], $2::text[], $3::jsonb[], $4::smallint[], $5::smallint[], $6::timestamptz[]) AS j

-- name: claim
SELECT * FROM ${schema}.claim_ready($1::text[], $2::int[], $3::int)

-- name: complete
SELECT * FROM ${schema}.complete_compact($1::int[], $2::bigint[], $3::int[], $4::bigint[], $5::bigint[], $6::bigint[])

-- name: advance_cursors
SELECT ${schema}.advance_claim_cursors($1::text[], $2::smallint[], $3::smallint[], $4::bigint[]) AS moved

-- name: close
SELECT * FROM ${schema}.close_compact($1::int[], $2::bigint[], $3::int[], $4::bigint[], $5::bigint[], $6::bigint[],
                                      $7::text[], $8::bigint[], $9::text[], $10::boolean[])
