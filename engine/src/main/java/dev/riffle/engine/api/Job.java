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
}
