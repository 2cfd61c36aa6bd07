package dev.riffle.engine.api;

/**
 * A completion (or another post-claim write) was refused because the attempt {@code (jobId, runLease)} is no
 * longer open. Nothing was written. This is the stale-writer guard working, not a failure of the engine.
 */
public final class AttemptRejectedException extends RiffleException {
    private static final long serialVersionUID = 1L;

    /** Why the attempt was refused. */
    public enum Reason {
        /** The attempt already has closure evidence (completed, rescued, cancelled, or a duplicate completion). */
        ALREADY_CLOSED,
        /** No open attempt matches: the run lease, receipt or batch position does not match the claim. */
        STALE
    }

    private final long jobId;
    private final long runLease;
    private final Reason reason;

    /** Creates the error. */
    public AttemptRejectedException(long jobId, long runLease, Reason reason) {
        super("attempt (job_id=" + jobId + ", run_lease=" + runLease + ") rejected: "
                + (reason == Reason.ALREADY_CLOSED ? "the attempt is already closed" : "no open attempt matches (stale writer)"));
        this.jobId = jobId;
        this.runLease = runLease;
        this.reason = reason;
    }

    /** The job id. */
    public long jobId() {
        return jobId;
    }

    /** The run lease the writer carried. */
    public long runLease() {
        return runLease;
    }

    /** Why it was refused. */
    public Reason reason() {
        return reason;
    }
}
