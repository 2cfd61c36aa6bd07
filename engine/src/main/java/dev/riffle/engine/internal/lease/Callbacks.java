package dev.riffle.engine.internal.lease;

import dev.riffle.engine.api.AttemptRejectedException;
import dev.riffle.engine.api.CallbackRejectedException;
import dev.riffle.engine.api.CallbackTimeoutException;
import dev.riffle.engine.api.ExternalCallback;
import dev.riffle.engine.api.InvalidJobException;
import dev.riffle.engine.internal.attempt.CallbackRegistrar;
import dev.riffle.engine.internal.attempt.ClaimedJob;
import dev.riffle.engine.internal.attempt.Receipt;
import dev.riffle.engine.internal.sql.Db;
import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicLong;
import org.jspecify.annotations.Nullable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Scheduler;

/**
 * External-wait callbacks (docs/design/delivery-contract.md). Registration materializes the attempt's lease when it has
 * none; a parked attempt wakes on the callback channel's NOTIFY, on a periodic re-check (a NOTIFY sent while the
 * listener was reconnecting is not lost, only late), or when its attempt is cancelled or rescued. Resolution takes the
 * attempt's lock in the database, so at most one resolution wins.
 */
public final class Callbacks implements CallbackRegistrar {

    /** Shortest callback timeout accepted. */
    public static final Duration MIN_TIMEOUT = Duration.ofSeconds(1);
    /** Longest callback timeout accepted. */
    public static final Duration MAX_TIMEOUT = Duration.ofDays(7);

    private record State(String status, @Nullable String payload) {}

    private final Db db;
    private final Flux<String> resolved;
    private final int maxPayloadBytes;
    // One engine-wide re-check tick that parked attempts subscribe to. A per-wait Flux.interval would cancel a
    // periodic task whenever a wait ends, often on an event-loop thread, and removing it takes the timer queue's
    // lock there; leaving a hot sink never touches the scheduler.
    private final reactor.core.publisher.Sinks.Many<Long> ticks =
            reactor.core.publisher.Sinks.many().multicast().directBestEffort();
    private final reactor.core.Disposable ticker;
    private final AtomicLong registered = new AtomicLong();
    private final AtomicLong resumed = new AtomicLong();

    /**
     * Creates the service. {@code resolved} emits the ids of callbacks resolved anywhere (the callback channel);
     * parked attempts re-check every {@code recheckInterval} as well.
     */
    public Callbacks(Db db, Flux<String> resolved, Duration recheckInterval, Scheduler scheduler, int maxPayloadBytes) {
        this.db = db;
        this.resolved = resolved;
        this.maxPayloadBytes = maxPayloadBytes;
        long nanos = recheckInterval.toNanos();
        this.ticker = scheduler.schedulePeriodically(() -> ticks.tryEmitNext(0L), nanos, nanos,
                java.util.concurrent.TimeUnit.NANOSECONDS);
    }

    /** Stops the re-check tick; waits still parked end through their attempt's cancellation or the NOTIFY. */
    public void close() {
        ticker.dispose();
        ticks.tryEmitComplete();
    }

    @Override
    public Mono<ExternalCallback> register(ClaimedJob job, Duration timeout) {
        if (timeout == null || timeout.compareTo(MIN_TIMEOUT) < 0 || timeout.compareTo(MAX_TIMEOUT) > 0) {
            return Mono.error(new IllegalArgumentException("callback timeout must be between 1 s and 7 days: " + timeout));
        }
        Receipt r = job.receipt();
        double secs = timeout.toNanos() / 1e9;
        return db.query("register_callback", st -> st.bind("$1", r.claimSlot()).bind("$2", r.batchId())
                                .bind("$3", r.batchIndex()).bind("$4", r.jobId()).bind("$5", r.runLease())
                                .bind("$6", r.receiptId()).bind("$7", secs),
                        row -> new Object[] {row.get("status", String.class), row.get("callback_id", UUID.class),
                                row.get("timeout_at", OffsetDateTime.class)})
                .single()
                .flatMap(row -> switch ((String) row[0]) {
                    case "registered" -> {
                        job.markLeased();
                        registered.incrementAndGet();
                        yield Mono.just((ExternalCallback) new Parked(job, (UUID) row[1], ((OffsetDateTime) row[2]).toInstant()));
                    }
                    case "waiting" -> Mono.error(new IllegalStateException(
                            "attempt (" + r.jobId() + ", " + r.runLease() + ") is already parked on a callback"));
                    case "closed" -> Mono.error(new AttemptRejectedException(r.jobId(), r.runLease(),
                            AttemptRejectedException.Reason.ALREADY_CLOSED));
                    default -> Mono.error(new AttemptRejectedException(r.jobId(), r.runLease(),
                            AttemptRejectedException.Reason.STALE));
                });
    }

    /** Resolves a callback from any process. Cold. */
    public Mono<Void> resume(UUID callbackId, String payloadJson) {
        return Mono.defer(() -> {
            java.util.Objects.requireNonNull(callbackId, "callbackId");
            ExternalCallback.requirePayload(payloadJson, maxPayloadBytes);
            return db.query("resume_external", st -> st.bind("$1", callbackId).bind("$2", payloadJson),
                            row -> row.get("result", String.class))
                    .single()
                    // The payload is the only value sent that a data exception can come from: jsonb refused what
                    // the syntax check let through (a \u0000 escape, a number beyond numeric). Nothing changed:
                    // the cast failed before resume_external ran, so the callback is still pending.
                    .onErrorMap(Db::isDataException, e -> new InvalidJobException("payload",
                            "rejected by the database: " + e.getMessage(), e))
                    .flatMap(result -> switch (result) {
                        case "resumed" -> {
                            resumed.incrementAndGet();
                            yield Mono.<Void>empty();
                        }
                        case "already_resolved" -> Mono.error(new CallbackRejectedException(callbackId,
                                CallbackRejectedException.Reason.ALREADY_RESOLVED));
                        default -> Mono.error(new CallbackRejectedException(callbackId,
                                CallbackRejectedException.Reason.NOT_FOUND));
                    });
        });
    }

    /** Callbacks registered by this process. */
    public long registered() {
        return registered.get();
    }

    /** Callbacks resolved through this process. */
    public long resumed() {
        return resumed.get();
    }

    private static java.util.function.Consumer<io.r2dbc.spi.Statement> attempt(ClaimedJob job, UUID id) {
        return st -> st.bind("$1", job.id()).bind("$2", job.runLease()).bind("$3", id);
    }

    private static State state(io.r2dbc.spi.Readable row) {
        return new State(row.get("status", String.class), row.get("payload", String.class));
    }

    private final class Parked implements ExternalCallback {
        private final ClaimedJob job;
        private final UUID id;
        private final Instant timeoutAt;

        Parked(ClaimedJob job, UUID id, Instant timeoutAt) {
            this.job = job;
            this.id = id;
            this.timeoutAt = timeoutAt;
        }

        @Override
        public UUID id() {
            return id;
        }

        @Override
        public Instant timeoutAt() {
            return timeoutAt;
        }

        @Override
        public Mono<String> await() {
            return db.query("park_callback", attempt(job, id), Callbacks::state).single().flatMap(s -> "waiting".equals(s.status()) ? waitForResolution() : Mono.just(s))
                    .flatMap(this::outcome);
        }

        private Mono<State> waitForResolution() {
            String key = id.toString();
            // Triggers: this callback's NOTIFY, the attempt's cancel/rescue signal, a periodic re-check, and one
            // immediate re-check (listed last so the NOTIFY subscription exists before it runs: a resolution that
            // committed between the park and now is seen by it, a later one by the NOTIFY).
            Flux<Long> triggers = Flux.merge(
                    resolved.filter(key::equals).map(x -> 0L),
                    job.cancellation().thenReturn(0L).flux(),
                    ticks.asFlux().onBackpressureDrop(),
                    Flux.just(0L));
            return triggers.concatMap(t -> db.query("callback_status", attempt(job, id), Callbacks::state).single(), 1)
                    .filter(s -> !"waiting".equals(s.status()))
                    .next();
        }

        private Mono<String> outcome(State s) {
            if ("resolved".equals(s.status()) && s.payload() != null) {
                return Mono.just(s.payload());
            }
            return Mono.error(new CallbackTimeoutException(id, job.isCancelled()
                    ? "its attempt was cancelled or rescued" : "it timed out or its attempt ended"));
        }
    }
}
