package dev.riffle.engine.internal.attempt;

import dev.riffle.engine.api.BackoffFunction;
import dev.riffle.engine.api.JobOutcome;
import java.time.Duration;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The engine side of per-queue backoff: a handler's retry without a delay, on a queue configured with a
 * {@link BackoffFunction}, gets the function's delay before it is recorded. Every other retry keeps a null delay,
 * and the database applies the queue's recorded policy ({@code retry_backoff}).
 */
public final class RetryDelays {
    private static final Logger log = LoggerFactory.getLogger("dev.riffle.engine.work");

    /** No engine-side functions: every retry without a delay uses the database backoff. */
    public static final RetryDelays NONE = new RetryDelays(Map.of());

    private final Map<String, BackoffFunction> byQueue;

    /** Functions by queue name. */
    public RetryDelays(Map<String, BackoffFunction> byQueue) {
        this.byQueue = Map.copyOf(byQueue);
    }

    /** {@code outcome}, with the queue's function's delay filled in when it is a retry without one. */
    public JobOutcome apply(JobOutcome outcome, String queue, int attempt) {
        if (!(outcome instanceof JobOutcome.Retry r) || r.delay() != null) {
            return outcome;
        }
        BackoffFunction fn = byQueue.get(queue);
        if (fn == null) {
            return outcome;
        }
        Duration d;
        try {
            d = fn.delay(attempt);
        } catch (RuntimeException e) {
            log.warn("backoff function of queue {} failed for attempt {}; the queue's database backoff applies", queue,
                    attempt, e);
            return outcome;
        }
        if (d == null || d.isNegative() || d.compareTo(JobOutcome.MAX_DELAY) > 0) {
            log.warn("backoff function of queue {} returned {} for attempt {} (must be 0 to {}); the queue's database "
                    + "backoff applies", queue, d, attempt, JobOutcome.MAX_DELAY);
            return outcome;
        }
        return new JobOutcome.Retry(r.error(), d, r.cause());
    }
}
