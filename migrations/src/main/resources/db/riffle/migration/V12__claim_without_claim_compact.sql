-- The claim's step F no longer goes through claim_compact: claim_limited (R__30_claim.sql) reads the clock, computes
-- the deadline and finds the current claim slot itself, then calls claim_compact_slot, one nested RETURN QUERY level
-- fewer per claim (its own time was ~0.05 ms of a ~1.45 ms claim in the bench, session 9). The function is dropped
-- here, before the repeatables recreate claim_limited (docs/adr/0007, rule 3); nothing else calls it.
-- Placeholders: ${schema}.
DROP FUNCTION IF EXISTS ${schema}.claim_compact(text, smallint, smallint, int, bigint, bigint, int, int);
