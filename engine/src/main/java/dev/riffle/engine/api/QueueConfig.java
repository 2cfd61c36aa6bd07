package dev.riffle.engine.api;

import java.time.Duration;
import java.util.Objects;

/**
 * Per-queue settings known to the engine process.
 *
 * @param name queue name
 * @param deadline hard deadline of every attempt claimed from this queue; {@link Duration#ZERO} (the default)
 *                 means no deadline, and the claim batch's {@code deadline_at} is NULL
 * @param dlq whether terminal failures of this queue go to the DLQ; null means the engine default
 */
public record QueueConfig(String name, Duration deadline, @org.jspecify.annotations.Nullable Boolean dlq) {

    /** Validates. */
    public QueueConfig {
        Objects.requireNonNull(name, "name");
        Objects.requireNonNull(deadline, "deadline");
        NewJob.builder("validate").queue(name).build();
        if (deadline.isNegative()) {
            throw new IllegalArgumentException("deadline must not be negative: " + deadline);
        }
        if (!deadline.isZero() && deadline.compareTo(Duration.ofSeconds(1)) < 0) {
            throw new IllegalArgumentException("deadline must be zero (none) or at least 1 s: " + deadline);
        }
        if (deadline.compareTo(Duration.ofDays(7)) > 0) {
            throw new IllegalArgumentException("deadline must be at most 7 days: " + deadline);
        }
    }

    /** A queue with no deadline. */
    public static QueueConfig of(String name) {
        return new QueueConfig(name, Duration.ZERO, null);
    }

    /** A queue whose attempts expire after {@code deadline}. */
    public static QueueConfig withDeadline(String name, Duration deadline) {
        return new QueueConfig(name, deadline, null);
    }

    /** The same queue with its DLQ policy set. */
    public QueueConfig withDlq(boolean enabled) {
        return new QueueConfig(name, deadline, enabled);
    }
}
