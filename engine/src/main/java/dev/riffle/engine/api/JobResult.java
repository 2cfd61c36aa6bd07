package dev.riffle.engine.api;

/**
 * What happened to one attempt processed by {@code Riffle.work(...)}.
 *
 * @param jobId the job
 * @param runLease the attempt
 * @param kind the job kind
 * @param outcome the outcome the handler produced (or the engine decided: error ⇒ retry, unknown kind ⇒ fail)
 * @param accepted true when the outcome was recorded; false when the attempt was no longer open (for example it
 *                 was cancelled or rescued meanwhile), in which case nothing was written
 */
public record JobResult(long jobId, long runLease, String kind, JobOutcome outcome, boolean accepted) {}
