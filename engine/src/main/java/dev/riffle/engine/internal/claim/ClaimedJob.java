package dev.riffle.engine.internal.claim;

import dev.riffle.engine.api.Job;
import dev.riffle.engine.api.JobOutcome;
import dev.riffle.engine.internal.complete.CompletionBatcher;
import java.time.Instant;
import java.util.Optional;
import org.jspecify.annotations.Nullable;
import reactor.core.publisher.Mono;

/**
 * A claimed attempt with its claim-time snapshot: everything compact completion needs to address its receipt
 * (claim slot, batch id, 1-based index, receipt id) without re-reading the ready row.
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
    private final CompletionBatcher completer;
    private final boolean dlq;
    private final @Nullable String payloadJson;
    private final java.util.concurrent.atomic.AtomicReference<@Nullable String> pendingProgress =
            new java.util.concurrent.atomic.AtomicReference<>();
    private volatile @Nullable Heartbeater heartbeater;
    private final reactor.core.publisher.Sinks.Empty<Void> cancelled = reactor.core.publisher.Sinks.empty();
    private volatile boolean cancelledFlag;
    // Local monotonic delivery time: heartbeat age is judged with this process's clock, never against the DB's.
    private final long deliveredNanos = System.nanoTime();

    /** Where the attempt's receipt lives in the receipt plane. */
    public record Receipt(int claimSlot, long batchId, int batchIndex, long receiptId, long jobId, long runLease) {}

    /** Creates the attempt. */
    public ClaimedJob(long id, long runLease, int attempt, int maxAttempts, String kind, String queue, int priority,
                      String argsJson, Instant createdAt, Instant claimedAt, @Nullable Instant deadlineAt,
                      Receipt receipt, CompletionBatcher completer, boolean dlq, @Nullable String payloadJson) {
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
        this.completer = completer;
        this.dlq = dlq;
        this.payloadJson = payloadJson;
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
        Heartbeater h = heartbeater;
        return h == null ? Mono.empty() : h.beat(java.util.List.of(this)).then();
    }

    /** Takes the buffered progress for a heartbeat write (null when nothing new). */
    @Nullable String takeProgress() {
        return pendingProgress.getAndSet(null);
    }

    /** Puts progress back when its write failed, unless newer progress arrived meanwhile. */
    void restoreProgress(String json) {
        pendingProgress.compareAndSet(null, json);
    }

    /** Whether progress is waiting to be written. */
    boolean hasPendingProgress() {
        return pendingProgress.get() != null;
    }

    void attach(Heartbeater heartbeater) {
        this.heartbeater = heartbeater;
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
        return completer.finish(receipt, JobOutcome.complete(), dlq);
    }

    @Override
    public Mono<Void> finish(JobOutcome outcome) {
        return completer.finish(receipt, java.util.Objects.requireNonNull(outcome, "outcome"), dlq);
    }

    /** Gives the attempt back unconsumed; for attempts that were never handed to a handler. */
    public Mono<Void> release() {
        return completer.release(receipt);
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

    /** {@code System.nanoTime()} when this process received the attempt. */
    public long deliveredNanos() {
        return deliveredNanos;
    }

    /** Whether a terminal or retry outcome for this queue goes to the DLQ. */
    public boolean dlq() {
        return dlq;
    }

    @Override
    public String toString() {
        return "Job[id=" + id + ", runLease=" + runLease + ", kind=" + kind + ", queue=" + queue + ", attempt=" + attempt + "]";
    }
}
