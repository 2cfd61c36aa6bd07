-- Enqueue shards on by default (issue #12): a queue created from now on spreads its jobs over 4 lanes per priority,
-- so several claims of one queue run at once (docs/design/delivery-contract.md#enqueue-shards). The count was chosen
-- by measurement (docs/benchmarks.md). A queue keeps the count recorded in its queue_meta row; an engine's
-- QueueConfig.enqueueShards overwrites it at start.
ALTER TABLE ${schema}.queue_meta ALTER COLUMN enqueue_shards SET DEFAULT 4;
