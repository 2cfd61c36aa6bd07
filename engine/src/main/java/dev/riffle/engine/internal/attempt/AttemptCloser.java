package dev.riffle.engine.internal.attempt;

import dev.riffle.engine.api.JobOutcome;
import reactor.core.publisher.Mono;

/**
 * What an attempt needs from the close mechanism ({@code internal.close}): record its outcome, or give it back
 * unconsumed. The interface keeps {@code ClaimedJob} from depending on the batcher that implements it.
 */
public interface AttemptCloser {

    /**
     * Records {@code outcome} for the attempt at {@code receipt}; errors with
     * {@link dev.riffle.engine.api.AttemptRejectedException} when the database refuses it as stale or already closed.
     * {@code leased} routes a leased attempt through the general close path, which also ends the lease. Whether a
     * terminal exit goes to the DLQ is decided in SQL from the queue's recorded policy (docs/design/delivery-contract.md).
     */
    Mono<Void> finish(Receipt receipt, JobOutcome outcome, boolean leased);

    /** Gives back an attempt that was never handed to a handler: the job is ready again at once. */
    Mono<Void> release(Receipt receipt, boolean leased);
}
