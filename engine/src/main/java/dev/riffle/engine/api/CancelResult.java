package dev.riffle.engine.api;

/** What {@code cancel(jobId)} found and did. */
public enum CancelResult {
    /** The job was ready and not yet claimed: it is tombstoned and will never be delivered. */
    CANCELLED_AVAILABLE,
    /** The job was scheduled or waiting for a retry: it left the backlog. */
    CANCELLED_SCHEDULED,
    /** The job was running: its attempt is closed (a later completion is rejected) and its worker was signalled. */
    CANCELLED_RUNNING,
    /** No live job with that id (already terminal, in the DLQ, or unknown). */
    NOT_FOUND
}
