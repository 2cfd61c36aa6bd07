-- Eight enqueue shards for a queue created from now on (issue #12, docs/benchmarks.md "Session 10"). With four
-- engine processes of two claims each on one queue, four lanes were all locked for ~27 % of claim calls, which
-- then found nothing and retried; with eight, ~7 %, and the four-process drain ran 10-16 % faster. One process and
-- a 500 jobs/s steady run showed no difference beyond noise. A queue keeps the count recorded in its queue_meta row
-- (queues created before this migration keep 4); an engine's QueueConfig.enqueueShards overwrites it at start.
ALTER TABLE ${schema}.queue_meta ALTER COLUMN enqueue_shards SET DEFAULT 8;
