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
     * Run again later, consuming this attempt. With {@code delay} null the queue's backoff applies: its
     * {@link QueueConfig#backoff()} policy or {@link QueueConfig#backoffFunction()} when set, else {@code 2^attempt}
     * seconds plus up to 25 % jitter, capped at 24 hours. When no attempt is left the job fails terminally (or goes
     * to the DLQ when the queue's DLQ policy is on).
     *
     * @param error message recorded in the job's error history (last {@value JobError#HISTORY} kept)
     * @param delay explicit delay, or null for the backoff
     * @param cause the exception behind the failure, or null; its class name and stack trace (first
     *              {@value JobError#MAX_STACK_TRACE} characters) are recorded with the message
     */
    record Retry(String error, @Nullable Duration delay, @Nullable Throwable cause) implements JobOutcome {
        /** Validates. */
        public Retry {
            Objects.requireNonNull(error, "error");
            if (delay != null && (delay.isNegative() || delay.compareTo(MAX_DELAY) > 0)) {
                throw new IllegalArgumentException("retry delay must be between 0 and " + MAX_DELAY + ", got " + delay);
            }
        }

        /** A retry without an exception. */
        public Retry(String error, @Nullable Duration delay) {
            this(error, delay, null);
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
     * @param cause the exception behind the failure, or null; recorded as for {@link Retry#cause()}
     */
    record Fail(String reason, @Nullable Throwable cause) implements JobOutcome {
        /** Validates. */
        public Fail {
            Objects.requireNonNull(reason, "reason");
        }

        /** A failure without an exception. */
        public Fail(String reason) {
            this(reason, null);
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

    /**
     * Retry with the queue's backoff after {@code cause}: its message (or class name when it has none) is the
     * error, and its class and stack trace are recorded too. What the engine records for a handler that throws or
     * signals an error. (Named apart from {@link #retry(String)} so a null argument is never ambiguous.)
     */
    static JobOutcome retryOn(Throwable cause) {
        return new Retry(messageOf(cause), null, cause);
    }

    /** Retry with the queue's backoff, recording {@code error} with {@code cause}'s class and stack trace. */
    static JobOutcome retryOn(String error, Throwable cause) {
        return new Retry(error, null, Objects.requireNonNull(cause, "cause"));
    }

    /** Terminal failure recording {@code reason} with {@code cause}'s class and stack trace. */
    static JobOutcome fail(String reason, Throwable cause) {
        return new Fail(reason, Objects.requireNonNull(cause, "cause"));
    }

    /** The message recorded for an exception: its message, or its class name when it has none. */
    static String messageOf(Throwable cause) {
        String m = Objects.requireNonNull(cause, "cause").getMessage();
        return m != null ? m : cause.getClass().getName();
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
