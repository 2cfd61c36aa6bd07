-- Per-slot functions (docs/adr/0009, item 6): hot-path statements that must name one ring child are written as one
-- plan-cached function per ring slot by a define_* generator in their mechanism's file; this file holds what those
-- generators share. Repeatable migration (docs/adr/0007): functions only.

-- Writes the dispatcher p_dispatcher(p_signature) p_returns, which calls p_prefix || '_<slot>' for the slot given in
-- its parameter p_slot_param, for slots 0 .. p_slots - 1, with the statement p_arm (a format() string whose one %s
-- is the schema-qualified name of the slot's function). A slot outside the ring raises case_not_found. Static calls
-- in a CASE, so the dispatch itself is planned once per session, not per call.
CREATE OR REPLACE FUNCTION ${schema}.define_slot_dispatcher(p_dispatcher text, p_prefix text, p_signature text,
                                                 p_returns text, p_slot_param text, p_arm text, p_slots int)
RETURNS void
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    s      int;
    v_arms text := '';
BEGIN
    FOR s IN 0 .. p_slots - 1 LOOP
        v_arms := v_arms || format(E'\n        WHEN %s THEN ', s)
                  || format(p_arm, format('%s.%I', '${schema}', p_prefix || '_' || s)) || ';';
    END LOOP;
    EXECUTE format($f$
CREATE OR REPLACE FUNCTION %1$s.%2$I(%3$s)
%4$s
LANGUAGE plpgsql VOLATILE AS $fn$
BEGIN
    CASE %5$I %6$s
    END CASE;
END
$fn$
$f$, '${schema}', p_dispatcher, p_signature, p_returns, p_slot_param, v_arms);
END
$$;
