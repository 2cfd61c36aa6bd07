package dev.riffle.engine.api;

import java.time.Instant;

/**
 * A job parked in the dead-letter queue.
 *
 * @param jobId job id
 * @param queue queue
 * @param kind kind
 * @param argsJson arguments
 * @param attempt attempts consumed
 * @param runLease run lease of the last attempt
 * @param reason why it was dead-lettered
 * @param payloadJson error history and metadata, or null
 * @param dlqAt when it was dead-lettered
 */
public record DlqEntry(long jobId, String queue, String kind, String argsJson, int attempt, long runLease,
                       String reason, @org.jspecify.annotations.Nullable String payloadJson, Instant dlqAt) {}
