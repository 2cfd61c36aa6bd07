package dev.riffle.engine.test.fault;

import dev.riffle.engine.api.AttemptRejectedException;
import dev.riffle.engine.api.Job;
import dev.riffle.engine.api.RiffleShutdownException;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicBoolean;
import reactor.core.publisher.Mono;
import reactor.util.retry.Retry;

/**
 * Completing a job the way a careful handler does while the database connection may die under it.
 *
 * <p>{@link Job#complete()} retries a flush that failed transiently a few times, then gives up and reports the
 * error; the attempt then stays open (for rescue) unless the caller tries again. A failed try may also have
 * committed before its acknowledgement was lost, in which case the next try finds the attempt already closed.
 * {@link #complete(Job, int, Duration)} retries the call and tells those cases apart, so fault tests can both
 * drain through a fault and count how often the engine's own retries were not enough.
 */
public final class Completions {

    /** How a completion ended. */
    public enum Outcome {
        /** Accepted on the first call. */
        ACCEPTED,
        /** Accepted by a later call after earlier calls failed with errors other than a rejection. */
        ACCEPTED_AFTER_RETRY,
        /**
         * A later call found the attempt already closed after an earlier call had failed: the failed call's
         * commit went through but its acknowledgement was lost (an in-doubt commit that turned out committed).
         */
        CLOSED_BY_EARLIER_TRY,
        /** Rejected on the first call: the attempt was already closed or stale before this handler completed it. */
        REJECTED
    }

    private Completions() {}

    /**
     * Completes {@code job}, calling {@link Job#complete()} up to {@code maxCalls} times with exponential backoff
     * (capped at 2 s) while it fails with anything but {@link AttemptRejectedException} or
     * {@link RiffleShutdownException}. Never blocks. Errors with the last failure when every call failed.
     */
    public static Mono<Outcome> complete(Job job, int maxCalls, Duration firstBackoff) {
        if (maxCalls < 1) {
            throw new IllegalArgumentException("maxCalls must be at least 1");
        }
        return Mono.defer(() -> {
            AtomicBoolean failedBefore = new AtomicBoolean();
            return Mono.defer(() -> job.complete()
                            .then(Mono.fromSupplier(() -> failedBefore.get() ? Outcome.ACCEPTED_AFTER_RETRY : Outcome.ACCEPTED))
                            .onErrorResume(AttemptRejectedException.class, e -> {
                                if (!failedBefore.get()) {
                                    return Mono.just(Outcome.REJECTED);
                                }
                                return e.reason() == AttemptRejectedException.Reason.ALREADY_CLOSED
                                        ? Mono.just(Outcome.CLOSED_BY_EARLIER_TRY)
                                        : Mono.error(e);
                            })
                            .doOnError(e -> failedBefore.set(true)))
                    .retryWhen(Retry.backoff(maxCalls - 1L, firstBackoff).maxBackoff(Duration.ofSeconds(2))
                            .filter(e -> !(e instanceof AttemptRejectedException) && !(e instanceof RiffleShutdownException))
                            .onRetryExhaustedThrow((spec, signal) -> signal.failure()));
        });
    }
}
