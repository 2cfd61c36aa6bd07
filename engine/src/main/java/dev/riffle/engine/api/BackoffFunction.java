package dev.riffle.engine.api;

import java.time.Duration;

/**
 * A queue's retry delay computed in the engine ({@link QueueConfig#withBackoffFunction}): called when a handler of
 * the queue retries without an explicit delay (a {@link JobOutcome.Retry} with a null delay, or a handler that
 * threw). It lives in this process only: rescues (stale workers, deadlines, callback timeouts) run in the database
 * and use the queue's recorded {@link BackoffPolicy} (or the built-in one), and another engine on the schema uses
 * its own configuration. Must be fast and must not block; it runs on the thread that records the outcome.
 */
@FunctionalInterface
public interface BackoffFunction {

    /**
     * The delay before the next attempt, after attempt {@code attempt} (1-based) failed. A null, negative or too long
     * result (over {@link JobOutcome#MAX_DELAY}), or an exception, is logged and the queue's database backoff applies.
     */
    Duration delay(int attempt);
}
