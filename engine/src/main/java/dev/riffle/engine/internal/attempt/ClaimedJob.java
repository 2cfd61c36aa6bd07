package dev.riffle.engine.internal.attempt;

import dev.riffle.engine.api.Job;
import dev.riffle.engine.api.JobOutcome;
import java.time.Instant;
import java.util.Optional;
import org.jspecify.annotations.Nullable;
import reactor.core.publisher.Mono;

/**
 * A claimed attempt with its claim-time snapshot: everything completion needs to address its receipt (claim slot,
 * batch id and 1-based index, or batch id 0 for a row-local claim; receipt id) without re-reading the ready row.
 * Once the attempt is leased (claimed from a materialized queue, or materialized by a callback registration) its
 * outcomes go through the general close path, which also ends the lease.
 */
public final class ClaimedJob implements Job {

    private final long id;
    private final long runLease;
    private final int attempt;
    private final int maxAttempts;
    private final String kind;
    private final String queue;
    private final int priority;
    private final String argsJson;
    private final Instant createdAt;
    private final Instant claimedAt;
    private final @Nullable Instant deadlineAt;
    private final Receipt receipt;
    private final AttemptServices services;
    private final @Nullable String payloadJson;
    private final java.util.concurrent.atomic.AtomicReference<@Nullable String> pendingProgress =
            new java.util.concurrent.atomic.AtomicReference<>();
    private volatile boolean leased;
    private final reactor.core.publisher.Sinks.Empty<Void> cancelled = reactor.core.publisher.Sinks.empty();
    private volatile boolean cancelledFlag;
    // Local monotonic delivery time: heartbeat age is judged with this process's clock, never against the DB's.
    private final long deliveredNanos;

    /** Creates the attempt. */
    public ClaimedJob(long id, long runLease, int attempt, int maxAttempts, String kind, String queue, int priority,
                      String argsJson, Instant createdAt, Instant claimedAt, @Nullable Instant deadlineAt,
                      Receipt receipt, AttemptServices services, @Nullable String payloadJson,
                      long deliveredNanos) {
        this.id = id;
        this.runLease = runLease;
        this.attempt = attempt;
        this.maxAttempts = maxAttempts;
        this.kind = kind;
        this.queue = queue;
        this.priority = priority;
        this.argsJson = argsJson;
        this.createdAt = createdAt;
        this.claimedAt = claimedAt;
        this.deadlineAt = deadlineAt;
        this.receipt = receipt;
        this.services = services;
        this.payloadJson = payloadJson;
        this.deliveredNanos = deliveredNanos;
    }

    @Override
    public @Nullable String payloadJson() {
        return payloadJson;
    }

    @Override
    public void progress(dev.riffle.engine.api.JobProgress progress) {
        pendingProgress.set(progress.toJson());
    }

    @Override
    public Mono<Void> flushProgress() {
        return services.progress().beat(java.util.List.of(this)).then();
    }

    /** Takes the buffered progress for a heartbeat write (null when nothing new). */
    public @Nullable String takeProgress() {
        return pendingProgress.getAndSet(null);
    }

    /** Puts progress back when its write failed, unless newer progress arrived meanwhile. */
    public void restoreProgress(String json) {
        pendingProgress.compareAndSet(null, json);
    }

    /** Whether progress is waiting to be written. */
    public boolean hasPendingProgress() {
        return pendingProgress.get() != null;
    }

    /** Marks the attempt as managed by a materialized lease (claim-time or on demand). */
    public void markLeased() {
        this.leased = true;
    }

    /** Whether a materialized lease manages the attempt. */
    public boolean isLeased() {
        return leased;
    }

    @Override
    public Mono<dev.riffle.engine.api.ExternalCallback> registerCallback(java.time.Duration timeout) {
        return services.callbacks().register(this, timeout);
    }

    @Override public long id() { return id; }
    @Override public long runLease() { return runLease; }
    @Override public int attempt() { return attempt; }
    @Override public int maxAttempts() { return maxAttempts; }
    @Override public String kind() { return kind; }
    @Override public String queue() { return queue; }
    @Override public int priority() { return priority; }
    @Override public String argsJson() { return argsJson; }
    @Override public Instant createdAt() { return createdAt; }
    @Override public Instant claimedAt() { return claimedAt; }
    @Override public Optional<Instant> deadlineAt() { return Optional.ofNullable(deadlineAt); }

    /** The receipt address. */
    public Receipt receipt() {
        return receipt;
    }

    @Override
    public Mono<Void> complete() {
        return metered(JobOutcome.complete(), Mono.defer(() -> services.closer().finish(receipt, JobOutcome.complete(),
                leased)));
    }

    @Override
    public Mono<Void> finish(JobOutcome outcome) {
        java.util.Objects.requireNonNull(outcome, "outcome");
        return Mono.defer(() -> {
            JobOutcome applied = services.retryDelays().apply(outcome, queue, attempt);
            return metered(applied, services.closer().finish(receipt, applied, leased));
        });
    }

    /** Counts the outcome once its write is settled (RiffleMeter.OUTCOMES), and a success's end-to-end latency. */
    private Mono<Void> metered(@Nullable JobOutcome o, Mono<Void> write) {
        dev.riffle.engine.internal.metrics.Recorder meters = services.meters();
        if (!meters.enabled()) {
            return write;
        }
        return write.doOnSuccess(v -> {
            meters.record(dev.riffle.engine.api.RiffleMeter.OUTCOMES, 1, queue, kind, outcomeTag(o));
            if (o instanceof JobOutcome.Complete) {
                meters.record(dev.riffle.engine.api.RiffleMeter.END_TO_END_LATENCY, meters.nanosSince(createdAt),
                        queue, kind);
            }
        }).doOnError(e -> {
            if (e instanceof dev.riffle.engine.api.AttemptRejectedException) {
                meters.record(dev.riffle.engine.api.RiffleMeter.OUTCOMES, 1, queue, kind, "rejected");
            }
        });
    }

    @Override
    public <T> Mono<T> observed(Mono<T> handler) {
        java.util.Objects.requireNonNull(handler, "handler");
        return services.tracing().handle(this, handler, v -> v instanceof JobOutcome o ? outcomeTag(o) : null);
    }

    private String outcomeTag(@Nullable JobOutcome o) {
        if (o == null) {
            return "released";
        }
        if (o instanceof JobOutcome.Retry) {
            return attempt >= maxAttempts ? "failed" : "retried";
        }
        if (o instanceof JobOutcome.Snooze) {
            return "snoozed";
        }
        if (o instanceof JobOutcome.Fail) {
            return "failed";
        }
        if (o instanceof JobOutcome.Cancel) {
            return "cancelled";
        }
        return "completed";
    }

    @Override
    public <T> T args(Class<T> type) {
        java.util.Objects.requireNonNull(type, "type");
        dev.riffle.engine.api.ArgsCodec codec = services.argsCodec();
        if (codec == null) {
            throw new IllegalStateException("no args codec is configured (RiffleConfig.Builder.argsCodec); read "
                    + "argsJson() instead");
        }
        T value;
        try {
            value = codec.decode(argsJson, type);
        } catch (RuntimeException e) {
            throw new IllegalArgumentException("cannot decode the args of job " + id + " (" + kind + ") as "
                    + type.getName() + ": " + e.getMessage(), e);
        }
        if (value == null) {
            throw new IllegalArgumentException("the args codec decoded the args of job " + id + " to null");
        }
        return value;
    }

    /** Gives the attempt back unconsumed; for attempts that were never handed to a handler. */
    public Mono<Void> release() {
        return metered(null, Mono.defer(() -> services.closer().release(receipt, leased)));
    }

    @Override
    public Mono<Void> cancellation() {
        return cancelled.asMono();
    }

    @Override
    public boolean isCancelled() {
        return cancelledFlag;
    }

    /** Signals the handler that the attempt was cancelled or rescued elsewhere. */
    public void signalCancelled() {
        cancelledFlag = true;
        cancelled.tryEmitEmpty();
    }

    /** The engine clock's monotonic nanoseconds when this process received the attempt. */
    public long deliveredNanos() {
        return deliveredNanos;
    }


    @Override
    public String toString() {
        return "Job[id=" + id + ", runLease=" + runLease + ", kind=" + kind + ", queue=" + queue + ", attempt=" + attempt + "]";
    }
}
