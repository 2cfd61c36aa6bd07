package dev.riffle.engine.api;

import java.time.Duration;

/**
 * How deep a queue is right now, with its DLQ and the age of its oldest waiting job: what the cached
 * {@code riffle.queue.*} gauges ({@link RiffleMeter#QUEUE_AVAILABLE} and the rest) report, read on demand. An admin
 * read that scans the backlog.
 *
 * @param queue the queue
 * @param available ready jobs not yet claimed
 * @param running open attempts (claims without closure evidence)
 * @param scheduled jobs in the backlog: scheduled for later, or retryable after a failed attempt
 * @param dlq entries in the dead-letter queue
 * @param oldestAvailableAge how long the oldest available job has been due (zero when none is available): the wait
 *                           a job enqueued now would add to, and the first sign of a queue falling behind
 */
public record QueueDepth(String queue, long available, long running, long scheduled, long dlq,
                         Duration oldestAvailableAge) {}
