package dev.riffle.engine.api;

/**
 * An attempt closed by maintenance because its worker was presumed dead (stale) or its deadline passed.
 *
 * @param jobId the job
 * @param runLease the rescued attempt
 * @param disposition where the job went: {@code retryable}, {@code failed} or {@code dlq}
 */
public record RescuedAttempt(long jobId, long runLease, String disposition) {}
