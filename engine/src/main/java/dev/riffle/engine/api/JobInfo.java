package dev.riffle.engine.api;

import java.time.Instant;
import java.util.List;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * A job as {@code admin().job(id)} finds it, wherever it lives: the ready ring, an open attempt, the backlog
 * (scheduled or retryable), terminal history or the DLQ.
 *
 * @param id job id
 * @param state where the job is
 * @param kind kind
 * @param queue queue
 * @param argsJson arguments, as JSON object text
 * @param priority lane priority, 1 (most urgent) to 4
 * @param attempt attempts consumed so far, a running one included (0 before the first claim; a DLQ retry resets
 *                it to 0)
 * @param maxAttempts maximum attempts
 * @param runLease run lease of the newest attempt (0 before the first claim)
 * @param runAt when the job is (or was) due; null only for a DLQ entry
 * @param createdAt when it was enqueued
 * @param attemptedAt when the newest attempt was claimed, or null before the first claim
 * @param finalizedAt when it reached its terminal state or the DLQ; null otherwise
 * @param progressJson the latest progress checkpoint as JSON (the running attempt's, or the one carried from the
 *                     previous attempt), or null
 * @param dlqReason why it was dead-lettered; null unless {@link JobState#DLQ}
 * @param errors error history, oldest first (the last {@value JobError#HISTORY} failed attempts)
 */
public record JobInfo(long id, JobState state, String kind, String queue, String argsJson, int priority, int attempt,
                      int maxAttempts, long runLease, @Nullable Instant runAt, Instant createdAt,
                      @Nullable Instant attemptedAt, @Nullable Instant finalizedAt, @Nullable String progressJson,
                      @Nullable String dlqReason, List<JobError> errors) {

    /** Validates and freezes. */
    public JobInfo {
        Objects.requireNonNull(state, "state");
        Objects.requireNonNull(kind, "kind");
        Objects.requireNonNull(queue, "queue");
        Objects.requireNonNull(argsJson, "argsJson");
        Objects.requireNonNull(createdAt, "createdAt");
        errors = List.copyOf(errors);
    }

    /** The newest error, if any attempt failed. */
    public java.util.Optional<JobError> lastError() {
        return errors.isEmpty() ? java.util.Optional.empty() : java.util.Optional.of(errors.get(errors.size() - 1));
    }
}
