package dev.riffle.engine.test;

import dev.riffle.engine.Riffle;
import dev.riffle.engine.api.DlqEntry;
import dev.riffle.engine.api.NewJob;
import dev.riffle.engine.api.QueueCounts;
import java.time.Duration;
import java.util.Objects;
import java.util.function.Predicate;
import reactor.core.publisher.Mono;

/**
 * Assertions on a queue's state through the engine's public API, as cold {@code Mono}s: each completes empty when the
 * expectation holds within the timeout and errors with an {@link AssertionError} (showing the last counts) otherwise,
 * so they compose with {@code StepVerifier.create(...).verifyComplete()} or end a test with {@code .block()}.
 *
 * <pre>{@code
 * RiffleAssertions.assertEnqueued(riffle, "mail", 3).block();
 * StepVerifier.create(RiffleAssertions.assertCompleted(riffle, "mail", 3)).verifyComplete();
 * StepVerifier.create(RiffleAssertions.assertInDlq(riffle, "mail", id)).verifyComplete();
 * }</pre>
 *
 * <p>Counts come from {@link Riffle#counts(String)} (an exact admin read); the DLQ from
 * {@link dev.riffle.engine.RiffleAdmin#listDlq}. For one job's state by id see {@link RiffleTestKit#awaitState}. The
 * {@code completed} count includes history already pruned, so it only grows. Waits poll every
 * {@value RiffleTestKit#POLL_MILLIS} ms.
 */
public final class RiffleAssertions {

    private RiffleAssertions() {}

    /** {@link #assertEnqueued(Riffle, String, long, Duration)} with {@link RiffleTestKit#DEFAULT_TIMEOUT}. */
    public static Mono<Void> assertEnqueued(Riffle riffle, String queue, long expected) {
        return assertEnqueued(riffle, queue, expected, RiffleTestKit.DEFAULT_TIMEOUT);
    }

    /**
     * Exactly {@code expected} jobs of {@code queue} are waiting: ready ({@code available}) plus scheduled for later
     * ({@code scheduled}); running attempts are not counted.
     */
    public static Mono<Void> assertEnqueued(Riffle riffle, String queue, long expected, Duration timeout) {
        return countsMatch(riffle, queue, c -> c.available() + c.scheduled() == expected,
                "available + scheduled == " + expected, timeout);
    }

    /** {@link #assertCompleted(Riffle, String, long, Duration)} with {@link RiffleTestKit#DEFAULT_TIMEOUT}. */
    public static Mono<Void> assertCompleted(Riffle riffle, String queue, long expected) {
        return assertCompleted(riffle, queue, expected, RiffleTestKit.DEFAULT_TIMEOUT);
    }

    /** Exactly {@code expected} jobs of {@code queue} have completed successfully (waits for it). */
    public static Mono<Void> assertCompleted(Riffle riffle, String queue, long expected, Duration timeout) {
        return countsMatch(riffle, queue, c -> c.completed() == expected, "completed == " + expected, timeout);
    }

    /** Nothing of {@code queue} is ready or running (scheduled jobs may remain); waits for it. */
    public static Mono<Void> assertIdle(Riffle riffle, String queue, Duration timeout) {
        return countsMatch(riffle, queue, c -> c.available() == 0 && c.inFlight() == 0,
                "available == 0 and inFlight == 0", timeout);
    }

    /** {@link #assertInDlq(Riffle, String, long, Duration)} with {@link RiffleTestKit#DEFAULT_TIMEOUT}. */
    public static Mono<Void> assertInDlq(Riffle riffle, String queue, long jobId) {
        return assertInDlq(riffle, queue, jobId, RiffleTestKit.DEFAULT_TIMEOUT);
    }

    /** Job {@code jobId} is in the dead-letter queue of {@code queue} (waits for it). */
    public static Mono<Void> assertInDlq(Riffle riffle, String queue, long jobId, Duration timeout) {
        return RiffleTestKit.of(riffle).awaitInDlq(queue, jobId, timeout).then();
    }

    /** Job {@code jobId} is not in the dead-letter queue of {@code queue} now (no waiting). */
    public static Mono<Void> assertNotInDlq(Riffle riffle, String queue, long jobId) {
        return RiffleTestKit.of(riffle).inDlq(queue, jobId).flatMap(entry -> entry.isPresent()
                ? Mono.<Void>error(new AssertionError("job " + jobId + " is in the DLQ of " + queue + ": "
                        + describe(entry.get())))
                : Mono.<Void>empty());
    }

    private static String describe(DlqEntry e) {
        return "kind " + e.kind() + ", attempt " + e.attempt() + ", reason " + e.reason();
    }

    private static Mono<Void> countsMatch(Riffle riffle, String queue, Predicate<QueueCounts> condition, String what,
                                          Duration timeout) {
        Objects.requireNonNull(riffle, "riffle");
        NewJob.checkName("queue", queue);
        if (timeout == null || timeout.isZero() || timeout.isNegative()) {
            throw new IllegalArgumentException("timeout must be a positive duration, got " + timeout);
        }
        Duration poll = Duration.ofMillis(RiffleTestKit.POLL_MILLIS);
        QueueCounts[] last = new QueueCounts[1];
        return riffle.counts(queue)
                .doOnNext(c -> last[0] = c)
                .filter(condition)
                .repeatWhenEmpty(ticks -> ticks.delayElements(poll, RiffleTestKit.timer()))
                .timeout(timeout, RiffleTestKit.timer()).onErrorResume(java.util.concurrent.TimeoutException.class, te -> Mono.defer(() -> Mono.error(new AssertionError(
                        "expected " + what + " for queue " + queue + " within " + timeout + ", last counts: "
                                + last[0]))))
                .then();
    }
}
