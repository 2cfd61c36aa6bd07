package dev.riffle.engine.api;

/**
 * Where a job is, as {@code admin().job(id)} reports it. The schema decides (SQL {@code job_lookup},
 * {@code R__85_job_lookup.sql}); each value names the place the job was found in.
 */
public enum JobState {
    /** Waiting in the backlog for its {@code runAt} (enqueued for later, or snoozed). */
    SCHEDULED,
    /** In the ready ring, not claimed yet. */
    AVAILABLE,
    /** Claimed: an attempt is open (a handler runs it, or its worker died and rescue will close it). */
    RUNNING,
    /** Claimed and parked on an external callback ({@link Job#registerCallback}). */
    WAITING_EXTERNAL,
    /** Failed an attempt and waits in the backlog for its backoff before the next one. */
    RETRYABLE,
    /** Done: an attempt completed. Terminal; kept as long as its queue slot (history retention). */
    COMPLETED,
    /** Failed terminally (attempts exhausted or {@link JobOutcome.Fail}) with no DLQ. Terminal, like {@link #COMPLETED}. */
    FAILED,
    /** Cancelled by an operator or by its handler. Terminal, like {@link #COMPLETED}. */
    CANCELLED,
    /** Parked in the dead-letter queue until retried or purged. */
    DLQ;

    /** Whether the job will not run again by itself (completed, failed, cancelled, or in the DLQ). */
    public boolean isFinal() {
        return this == COMPLETED || this == FAILED || this == CANCELLED || this == DLQ;
    }
}
