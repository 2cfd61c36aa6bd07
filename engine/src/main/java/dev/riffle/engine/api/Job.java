package dev.riffle.engine.api;

import java.time.Instant;
import java.util.Optional;
import reactor.core.publisher.Mono;

/**
 * One claimed attempt of a job, delivered by a subscription.
 *
 * <p>The attempt identity is {@code (id(), runLease())}. Every write after the claim is guarded by it, so a
 * worker holding an old attempt can never finalize a newer one. Delivery is at least once: a job whose attempt is
 * lost (crash, deadline) is delivered again with a higher run lease.
 */
public interface Job {

    /** Globally unique job id; survives retries. */
    long id();

    /** Attempt identity, monotonic per job. */
    long runLease();

    /** Attempts consumed including this one (1 on first delivery). */
    int attempt();

    /** Maximum attempts allowed. */
    int maxAttempts();

    /** The job kind (what handler should run it). */
    String kind();

    /** The queue it was claimed from. */
    String queue();

    /** Lane priority, 1 (most urgent) to 4. */
    int priority();

    /** The job's arguments as JSON object text. */
    String argsJson();

    /**
     * The job's arguments decoded into {@code type} by the engine's {@link ArgsCodec}
     * ({@code RiffleConfig.Builder.argsCodec}). The default implementation has no codec and throws
     * {@link IllegalStateException}; delivered jobs implement it.
     *
     * @throws IllegalStateException when no codec is configured
     * @throws IllegalArgumentException when the codec cannot decode the arguments as {@code type}
     */
    default <T> T args(Class<T> type) {
        throw new IllegalStateException("no args codec is configured (RiffleConfig.Builder.argsCodec)");
    }

    /**
     * The job's payload as JSON object text, or null: engine-owned history such as {@code errors} (last 10) and the
     * previous attempt's {@code progress} checkpoint.
     */
    @org.jspecify.annotations.Nullable String payloadJson();

    /**
     * {@code handler} run inside this attempt's handler observation ({@link RiffleObservation#HANDLE}), when the
     * engine has an {@code ObservationRegistry} ({@code RiffleConfig.Builder.observationRegistry}): the observation
     * continues the trace that was current when the job was enqueued (stored with the job, so also when another
     * process enqueued it), and is in {@code handler}'s Reactor Context under Micrometer's
     * {@code ObservationThreadLocalAccessor.KEY} while it runs, so the handler's own observations (an HTTP client's,
     * a database driver's) are its children. {@code Riffle.work(...)} does this for every handler; with
     * {@code subscribe()} wrap the handler yourself:
     * {@code riffle.subscribe("q").flatMap(job -> job.observed(handle(job)).then(job.complete()), 32)}.
     * Without a registry (and in this default implementation) {@code handler} is returned unchanged.
     */
    default <T> Mono<T> observed(Mono<T> handler) {
        return handler;
    }

    /** Records a progress checkpoint in memory; it is written with the next heartbeat. Never blocks. */
    void progress(JobProgress progress);

    /** Records a progress checkpoint; see {@link #progress(JobProgress)}. */
    default void progress(int percent, String message) {
        progress(new JobProgress(percent, message, null));
    }

    /** Writes buffered progress (and heartbeat evidence) now. Cold. */
    Mono<Void> flushProgress();

    /** When the job was enqueued (database clock). */
    Instant createdAt();

    /** When this attempt was claimed (database clock). */
    Instant claimedAt();

    /** When this attempt's deadline expires, if the queue has one. */
    Optional<Instant> deadlineAt();

    /**
     * Completes this attempt successfully. Cold: nothing happens until subscribed. The returned {@code Mono}
     * succeeds once the completion is durable (committed), possibly batched with other completions. It errors with
     * {@link AttemptRejectedException} when the attempt is no longer open (already completed, or stale); nothing
     * is written twice.
     */
    Mono<Void> complete();

    /**
     * Ends this attempt with {@code outcome} (complete, retry, snooze, fail, cancel). Cold; succeeds once the
     * outcome is durable; errors with {@link AttemptRejectedException} when the attempt is no longer open.
     */
    Mono<Void> finish(JobOutcome outcome);

    /** Retry with the queue's backoff; see {@link JobOutcome.Retry}. */
    default Mono<Void> retry(String error) {
        return finish(JobOutcome.retry(error));
    }

    /** Retry after {@code delay}. */
    default Mono<Void> retry(String error, java.time.Duration delay) {
        return finish(JobOutcome.retry(error, delay));
    }

    /** Run again after {@code delay} without consuming an attempt. */
    default Mono<Void> snooze(java.time.Duration delay) {
        return finish(JobOutcome.snooze(delay));
    }

    /** Fail terminally (DLQ when the queue's policy is on). */
    default Mono<Void> fail(String reason) {
        return finish(JobOutcome.fail(reason));
    }

    /** Cancel this job from inside its handler. */
    default Mono<Void> cancel(String reason) {
        return finish(JobOutcome.cancel(reason));
    }

    /**
     * Completes (empty) when this attempt was taken away from outside (an operator's {@code cancel(jobId)}, or a
     * rescue), so a handler can stop early. Its later completion would be rejected anyway; this signal only saves
     * the work. Under {@code Riffle.work(...)} the engine cancels the handler's {@code Mono} on this signal; a
     * {@code subscribe()} user wires it in, e.g. {@code handle(job).takeUntilOther(job.cancellation().then(Mono.just(true)))}.
     * The signal arrives over LISTEN, so while that connection is down it may come late or not at all.
     */
    Mono<Void> cancellation();

    /** True once {@link #cancellation()} fired. */
    boolean isCancelled();

    /**
     * Registers an external-wait callback that times out after {@code timeout} (1 s to 7 days). A compact attempt
     * materializes its lease here; from now on the attempt's outcome goes through the lease (general) path. Cold.
     * Errors with {@link AttemptRejectedException} when the attempt is no longer open.
     */
    Mono<ExternalCallback> registerCallback(java.time.Duration timeout);
}
