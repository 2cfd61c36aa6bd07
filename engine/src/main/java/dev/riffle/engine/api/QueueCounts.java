package dev.riffle.engine.api;

/**
 * Exact per-queue counts. This is an admin read that scans the backlog; never call it on a dispatch path.
 *
 * @param queue the queue
 * @param available ready jobs not yet claimed (not tombstoned, not covered by claim evidence)
 * @param inFlight open attempts: claims without closure evidence, derived by anti-join
 * @param completed successfully completed jobs: retained history plus the counts folded in when history was pruned
 * @param scheduled jobs waiting in the deferred backlog (future run_at)
 * @param paused whether the queue is paused ({@code RiffleAdmin.pauseQueue}): nothing is claimed or promoted while
 *               it is; {@code available} and {@code scheduled} keep growing with enqueues
 */
public record QueueCounts(String queue, long available, long inFlight, long completed, long scheduled,
                          boolean paused) {

    /** Counts of a queue that is not paused. */
    public QueueCounts(String queue, long available, long inFlight, long completed, long scheduled) {
        this(queue, available, inFlight, completed, scheduled, false);
    }
}
