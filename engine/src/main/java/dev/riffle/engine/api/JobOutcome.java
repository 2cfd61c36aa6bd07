package dev.riffle.engine.api;

import java.time.Duration;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * How an attempt ends. A handler returns one (see {@link JobHandler}) or calls the matching method on
 * {@link Job}. Every outcome closes the attempt exactly once; a later write for the same attempt is rejected.
 */
public sealed interface JobOutcome {

    /** Success: the job is done. */
    record Complete() implements JobOutcome {}

    /**
     * Run again later, consuming this attempt. With {@code delay} null the queue's backoff applies:
     * {@code 2^attempt} seconds plus up to 25 % jitter, capped at 24 hours. When no attempt is left the job fails
     * terminally (or goes to the DLQ when the queue's DLQ policy is on).
     *
     * @param error message recorded in the job's error history (last 10 kept)
     * @param delay explicit delay, or null for the backoff
     */
    record Retry(String error, @Nullable Duration delay) implements JobOutcome {
        /** Validates. */
        public Retry {
            Objects.requireNonNull(error, "error");
            if (delay != null && (delay.isNegative() || delay.compareTo(MAX_DELAY) > 0)) {
                throw new IllegalArgumentException("retry delay must be between 0 and " + MAX_DELAY + ", got " + delay);
            }
        }
    }

    /**
     * Run again after {@code delay} without consuming an attempt.
     *
     * @param delay how long to wait
     */
    record Snooze(Duration delay) implements JobOutcome {
        /** Validates. */
        public Snooze {
            if (delay == null || delay.isNegative() || delay.compareTo(MAX_DELAY) > 0) {
                throw new IllegalArgumentException("snooze delay must be between 0 and " + MAX_DELAY + ", got " + delay);
            }
        }
    }

    /**
     * Terminal failure, no further attempts: a {@code failed} terminal row, or a DLQ entry when the queue's DLQ
     * policy is on.
     *
     * @param reason why
     */
    record Fail(String reason) implements JobOutcome {
        /** Validates. */
        public Fail {
            Objects.requireNonNull(reason, "reason");
        }
    }

    /**
     * The handler gives up on purpose: a {@code cancelled} terminal row.
     *
     * @param reason why
     */
    record Cancel(String reason) implements JobOutcome {
        /** Validates. */
        public Cancel {
            Objects.requireNonNull(reason, "reason");
        }
    }

    /** Longest retry or snooze delay: 365 days. */
    Duration MAX_DELAY = Duration.ofDays(365);

    /** Success. */
    static JobOutcome complete() {
        return new Complete();
    }

    /** Retry with the queue's backoff. */
    static JobOutcome retry(String error) {
        return new Retry(error, null);
    }

    /** Retry after an explicit delay. */
    static JobOutcome retry(String error, Duration delay) {
        return new Retry(error, delay);
    }

    /** Snooze without consuming an attempt. */
    static JobOutcome snooze(Duration delay) {
        return new Snooze(delay);
    }

    /** Terminal failure. */
    static JobOutcome fail(String reason) {
        return new Fail(reason);
    }

    /** Cancel. */
    static JobOutcome cancel(String reason) {
        return new Cancel(reason);
    }
}
