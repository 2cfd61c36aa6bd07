package dev.riffle.engine.internal.work;

import dev.riffle.engine.api.AttemptRejectedException;
import dev.riffle.engine.api.Job;
import dev.riffle.engine.api.JobHandler;
import dev.riffle.engine.api.JobOutcome;
import dev.riffle.engine.api.JobResult;
import dev.riffle.engine.api.RiffleShutdownException;
import dev.riffle.engine.api.RiffleMeter;
import dev.riffle.engine.internal.metrics.Recorder;
import dev.riffle.engine.internal.time.EngineClock;
import java.util.Map;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import reactor.core.publisher.Mono;

/**
 * The handler side of {@code Riffle.work(...)}: one delivered job to the handler registered for its kind
 * ({@link #handle}), its outcome recorded exactly once ({@link #record}), and the attempt's cancellation (an
 * operator's cancel, a rescue) honoured by cancelling the handler and writing nothing. The two steps are separate
 * so that a handler's slot is free once its handler has finished and its outcome is queued, not once the outcome is
 * durable (docs/design/delivery-contract.md#handler-slots-and-durability).
 */
public final class HandlerRunner {
    private final Map<String, JobHandler> handlers;
    private final OutcomeFailures outcomes;
    private final Recorder meters;
    private final EngineClock clock;

    /** Runs jobs through {@code handlers}, by kind, reporting unrecorded outcomes to the engine-wide {@code outcomes}. */
    public HandlerRunner(Map<String, JobHandler> handlers, OutcomeFailures outcomes) {
        this(handlers, outcomes, Recorder.NONE, EngineClock.system());
    }

    /** As above, recording pickup latency and handler duration to {@code meters}. */
    public HandlerRunner(Map<String, JobHandler> handlers, OutcomeFailures outcomes, Recorder meters, EngineClock clock) {
        this.handlers = Map.copyOf(handlers);
        this.outcomes = outcomes;
        this.meters = meters;
        this.clock = clock;
    }

    /**
     * A handler's finished run: the outcome to record, or none when the attempt was taken away while it ran (the
     * closure was recorded by whoever took it away, so nothing is written).
     */
    public record Handled(Job job, @Nullable JobOutcome outcome) {}

    /**
     * Runs {@code job} through the handler for its kind; completes when the handler has finished (or the attempt was
     * taken away), before anything is written. Never errors.
     */
    public Mono<Handled> handle(Job job) {
        JobHandler handler = handlers.get(job.kind());
        // Observed (Job.observed, a no-op without an ObservationRegistry) inside the error mapping, so the
        // handler's observation sees its error, and inside takeUntilOther, so a taken-away attempt reads interrupted.
        Mono<JobOutcome> outcome = job.observed(handler == null
                        ? Mono.just(JobOutcome.fail("no handler registered for kind '" + job.kind() + "'"))
                        : Mono.defer(() -> handler.handle(job)))
                .defaultIfEmpty(JobOutcome.complete())
                .onErrorResume(e -> Mono.just(JobOutcome.retryOn(e)));
        if (meters.enabled()) {
            outcome = timed(job, outcome);
        }
        return outcome
                // A cancel or rescue closed the attempt: stop the handler (its Mono sees the cancellation) and
                // write nothing; the closure was recorded by whoever took the attempt away.
                .takeUntilOther(job.cancellation().then(Mono.just(Boolean.TRUE)))
                .map(o -> new Handled(job, o))
                .defaultIfEmpty(new Handled(job, null));
    }

    /** Pickup latency (first attempts) when the handler starts, and the handler's duration when it ends. */
    private Mono<JobOutcome> timed(Job job, Mono<JobOutcome> outcome) {
        return Mono.defer(() -> {
            if (job.attempt() == 1) {
                meters.record(RiffleMeter.PICKUP_LATENCY, meters.nanosSince(job.createdAt()), job.queue(), job.kind());
            }
            long started = clock.nanos();
            return outcome.doOnNext(o -> meters.record(RiffleMeter.HANDLER_DURATION, clock.nanos() - started,
                    job.queue(), job.kind()));
        });
    }

    /**
     * Queues a handled outcome for the completion batcher and completes when it is durable (accepted) or could not
     * be recorded (not accepted: rejected as stale, or the flush failed and the attempt is left to rescue, exactly as
     * after a crash). Never errors.
     */
    public Mono<JobResult> record(Handled h) {
        Job job = h.job();
        JobOutcome o = h.outcome();
        if (o == null) {
            return Mono.just(new JobResult(job.id(), job.runLease(), job.kind(), JobOutcome.cancel(TAKEN_AWAY), false));
        }
        return job.finish(o)
                .doOnSuccess(v -> outcomes.recorded())
                .thenReturn(new JobResult(job.id(), job.runLease(), job.kind(), o, true))
                .onErrorResume(e -> {
                    if (!(e instanceof AttemptRejectedException)) {
                        outcomes.failed(job, e);
                    }
                    return Mono.just(new JobResult(job.id(), job.runLease(), job.kind(), o, false));
                });
    }

    private static final String TAKEN_AWAY = "the attempt was taken away while its handler ran (cancelled or rescued)";

    /**
     * Outcomes {@code work(...)} could not record (the database was unreachable, or the engine is closing): the
     * attempts stay open for rescue. Logged once when such failures start and once when recording works again;
     * one per engine, shared by all its {@code work(...)} calls, so an outage reads as two lines however many run.
     */
    public static final class OutcomeFailures {
        private static final Logger log = LoggerFactory.getLogger("dev.riffle.engine.work");
        private final java.util.concurrent.atomic.AtomicLong failing = new java.util.concurrent.atomic.AtomicLong();

        void failed(Job job, Throwable e) {
            if (e instanceof RiffleShutdownException) {
                log.debug("outcome of {} not recorded: {}", job, e.toString());
                return;
            }
            if (failing.getAndIncrement() == 0) {
                log.warn("recording handler outcomes fails ({}); those attempts stay open and rescue delivers the jobs "
                        + "again; further failures are counted, not logged", e.toString());
            }
        }

        void recorded() {
            // Read first: the common case (nothing failed) must not write a shared counter per outcome.
            long n = failing.get() == 0 ? 0 : failing.getAndSet(0);
            if (n > 0) {
                log.info("recording handler outcomes works again; {} outcomes were not recorded and are left to rescue", n);
            }
        }
    }
}
