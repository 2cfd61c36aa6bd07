package dev.riffle.engine.api;

import java.time.Instant;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * One entry of a job's error history (the last {@value #HISTORY} failed attempts are kept, in the job's payload).
 *
 * @param message the error message: a handler's retry/fail reason, or the exception's message
 * @param exceptionClass the exception's class name when the attempt ended with one (a handler that threw or
 *                       signalled an error, or {@link JobOutcome#retryOn(Throwable)}); null otherwise
 * @param stackTrace the exception's stack trace, cut to the first {@value #MAX_STACK_TRACE} characters; null when
 *                   there was no exception
 * @param attempt the attempt that failed (1-based)
 * @param at when it was recorded (database clock)
 */
public record JobError(String message, @Nullable String exceptionClass, @Nullable String stackTrace, int attempt,
                       Instant at) {

    /** Errors kept per job: {@value}. */
    public static final int HISTORY = 10;
    /** Longest stack trace kept per error, in characters: {@value} (the schema's {@code max_error_trace()}). */
    public static final int MAX_STACK_TRACE = 8192;

    /** Validates. */
    public JobError {
        Objects.requireNonNull(message, "message");
        Objects.requireNonNull(at, "at");
    }
}
