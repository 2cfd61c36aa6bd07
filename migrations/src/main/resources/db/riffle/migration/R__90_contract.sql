-- The schema contract the engine checks at start (docs/adr/0007), and the destructive-upgrade guard.
-- Applied last, so contract_version() only names the new contract once every other function file has been applied.
-- Repeatable migration (docs/adr/0007): functions only, each as CREATE OR REPLACE, re-applied by Flyway
-- whenever this file changes. Tables, types and indexes live in the versioned V__ files; a function whose
-- signature changes is dropped there first.

-- The version of the function contract between this schema and the engines that use it (docs/adr/0007). Bump it,
-- together with SchemaContract.VERSION in the engine, whenever a change to the functions is one an engine built
-- for the previous contract cannot run against (a signature, a result column or status word, a meaning).
CREATE OR REPLACE FUNCTION ${schema}.contract_version() RETURNS int
LANGUAGE sql IMMUTABLE AS $$
    SELECT 4
$$;

-- Destructive-upgrade guard (docs/design/maintenance.md): a legacy open_receipt_claims frontier table is dropped when empty;
-- when it holds rows, nothing is touched and the row count is returned so startup can refuse. -1: no such table.
CREATE OR REPLACE FUNCTION ${schema}.upgrade_guard() RETURNS bigint
LANGUAGE plpgsql VOLATILE SET plan_cache_mode = force_custom_plan AS $$
DECLARE
    v_n bigint;
BEGIN
    IF to_regclass(format('%s.%I', '${schema}', 'open_receipt_claims')) IS NULL THEN
        RETURN -1;
    END IF;
    EXECUTE format('SELECT count(*) FROM %s.%I', '${schema}', 'open_receipt_claims') INTO v_n;
    IF v_n = 0 THEN
        EXECUTE format('DROP TABLE %s.%I', '${schema}', 'open_receipt_claims');
        RETURN 0;
    END IF;
    RETURN v_n;
END
$$;
