-- NOTIFY channel names: defined once on the SQL side (the engine's NotifyChannels is the Java side, and
-- NotifyChannelsIT holds the two together). Repeatable migration (docs/adr/0007): functions only.

-- Channel that wakes claim loops of a queue: the payload is the queue name.
CREATE OR REPLACE FUNCTION ${schema}.ready_channel() RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT '${schema_name}.ready'::text
$$;

-- Channel that tells a worker its attempt was taken away (cancel, rescue): the payload is job_id:run_lease.
CREATE OR REPLACE FUNCTION ${schema}.cancel_channel() RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT '${schema_name}.cancel'::text
$$;

-- Channel that wakes a handler parked on an external callback: the payload is the callback id.
CREATE OR REPLACE FUNCTION ${schema}.callback_channel() RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT '${schema_name}.callback'::text
$$;
