package dev.riffle.engine.internal.close;

import dev.riffle.engine.api.AttemptRejectedException;
import dev.riffle.engine.api.JobOutcome;
import dev.riffle.engine.api.RiffleShutdownException;
import dev.riffle.engine.internal.attempt.AttemptCloser;
import dev.riffle.engine.internal.attempt.Receipt;
import dev.riffle.engine.internal.attempt.InFlight;
import dev.riffle.engine.internal.sql.Db;
import dev.riffle.engine.internal.time.EngineClock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import reactor.core.publisher.Mono;
import reactor.core.publisher.MonoSink;
import reactor.core.publisher.Sinks;
import reactor.core.scheduler.Scheduler;
import reactor.util.retry.Retry;

/**
 * Batches attempt outcomes (docs/design/delivery-contract.md). A flush goes out at {@code batchSize} items or
 * {@code window} after the first pending item, whichever comes first; while a flush is in flight, a second one starts
 * only for {@code batchSize / 8} items or for items that have waited {@code MAX_DEFER_WINDOWS} windows (fewer wait
 * for the finishing flush, which pumps again: on a loaded host each flush's fixed cost is what keeps batches small).
 * Compact successes go out as ONE {@code complete_compact} statement; non-success exits, and every outcome of a
 * materialized (leased) attempt, as ONE {@code close_attempts} statement; each is one round trip and one commit. Each
 * caller's {@code Mono} succeeds when its outcome is durable, or errors with {@link AttemptRejectedException} when the
 * attempt was no longer open; nothing is written for a rejected attempt.
 *
 * <p>If the process dies with items buffered, nothing is replayed: those attempts stay open and rescue handles
 * them. A flush that fails with a transient error (connection loss, restart, failover) is retried with capped,
 * jittered backoff for as long as the engine is open. A retried flush whose first try did commit finds its attempts
 * closed; the database tells whether that closure is exactly the one this item writes (then the item succeeds) or
 * someone else's, such as an operator cancel or rescue (then the caller gets {@link AttemptRejectedException}).
 */
public final class CompletionBatcher implements AttemptCloser {
    private static final Logger log = LoggerFactory.getLogger("dev.riffle.engine.complete");
    /** First pause before a transiently failed flush is retried. */
    static final Duration FLUSH_RETRY_MIN_BACKOFF = Duration.ofMillis(100);
    /** Longest pause between retries of a failing flush: how late outcomes land after an outage ends, at most. */
    static final Duration FLUSH_RETRY_MAX_BACKOFF = Duration.ofSeconds(3);
    /** A concurrent flush needs at least {@code batchSize / COMPANY_FLOOR_DIVISOR} outcomes (64 of 512). */
    static final int COMPANY_FLOOR_DIVISOR = 8;
    /** Outcomes wait at most this many windows for an in-flight flush before a concurrent one goes. */
    static final int MAX_DEFER_WINDOWS = 10;

    /** An outcome to record; a null outcome means "release": the attempt was claimed but never handed out. */
    private record Pending(Receipt receipt, @org.jspecify.annotations.Nullable JobOutcome outcome,
                           boolean leased, MonoSink<Void> sink, long queuedAt) {
        /** Compact successes take the cheap path; a lease must be ended by the general one. */
        boolean isCompactComplete() {
            return outcome instanceof JobOutcome.Complete && !leased;
        }
    }

    private final Db db;
    private final InFlight inFlight;
    private final int batchSize;
    private final Duration window;
    private final int flushConcurrency;
    /** Fewer pending outcomes than this do not start a flush next to one in flight (see {@link #pump}). */
    private final int companyFloor;
    /** How long pending outcomes may wait for an in-flight flush before a concurrent one takes them anyway. */
    private final long maxDeferNanos;
    private final Scheduler timer;
    private final AtomicLong flushes = new AtomicLong();
    private final AtomicLong completed = new AtomicLong();
    private final AtomicLong closed = new AtomicLong();
    private final AtomicLong rejected = new AtomicLong();
    private final CountedQueue<Pending> pending = new CountedQueue<>();
    private final java.util.concurrent.atomic.AtomicInteger flushing = new java.util.concurrent.atomic.AtomicInteger();
    private final java.util.concurrent.atomic.AtomicBoolean timerArmed = new java.util.concurrent.atomic.AtomicBoolean();
    private final Sinks.Empty<Void> terminated = Sinks.empty();
    private final Outage outage;
    private final boolean dlqDefault;
    private final EngineClock clock;
    private final dev.riffle.engine.internal.metrics.Recorder meters;
    private final dev.riffle.engine.internal.tracing.JobTracing tracing;
    private volatile boolean shutdown;
    /** Set when the engine gives up on buffered outcomes: transient flush failures are no longer retried. */
    private volatile boolean abandoned;

    /**
     * Creates the batcher. {@code dlqDefault} is this engine's {@code dlqByDefault}: sent with every exit, it decides
     * only for a queue with no policy recorded in {@code queue_meta} (SQL {@code dlq_for}).
     */
    public CompletionBatcher(Db db, InFlight inFlight, int batchSize, Duration window, int flushConcurrency, Scheduler timer,
                             EngineClock clock, boolean dlqDefault) {
        this(db, inFlight, batchSize, window, flushConcurrency, timer, clock, dlqDefault,
                dev.riffle.engine.internal.metrics.Recorder.NONE);
    }

    /** Creates the batcher, recording flush duration and size to {@code meters}. */
    public CompletionBatcher(Db db, InFlight inFlight, int batchSize, Duration window, int flushConcurrency, Scheduler timer,
                             EngineClock clock, boolean dlqDefault, dev.riffle.engine.internal.metrics.Recorder meters) {
        this(db, inFlight, batchSize, window, flushConcurrency, timer, clock, dlqDefault, meters,
                dev.riffle.engine.internal.tracing.JobTracing.NONE);
    }

    /** Creates the batcher, recording flush meters to {@code meters} and observing each flush with {@code tracing}. */
    public CompletionBatcher(Db db, InFlight inFlight, int batchSize, Duration window, int flushConcurrency, Scheduler timer,
                             EngineClock clock, boolean dlqDefault, dev.riffle.engine.internal.metrics.Recorder meters,
                             dev.riffle.engine.internal.tracing.JobTracing tracing) {
        this.clock = clock;
        this.meters = meters;
        this.tracing = tracing;
        this.db = db;
        this.inFlight = inFlight;
        this.batchSize = batchSize;
        this.window = window;
        this.flushConcurrency = flushConcurrency;
        this.companyFloor = Math.max(1, batchSize / COMPANY_FLOOR_DIVISOR);
        this.maxDeferNanos = window.toNanos() * MAX_DEFER_WINDOWS;
        this.timer = timer;
        this.outage = new Outage(clock);
        this.dlqDefault = dlqDefault;
    }

    /** Records {@code outcome} for the attempt; {@code leased} when a materialized lease manages it. Cold. */
    @Override
    public Mono<Void> finish(Receipt receipt, JobOutcome outcome, boolean leased) {
        return submit(receipt, java.util.Objects.requireNonNull(outcome, "outcome"), leased);
    }

    /**
     * Gives an attempt back that was claimed but never handed to a handler: its closure is labelled
     * {@code released}, the attempt is not consumed, and the job is ready again at once. Works during shutdown.
     */
    @Override
    public Mono<Void> release(Receipt receipt, boolean leased) {
        return submit(receipt, null, leased);
    }

    private Mono<Void> submit(Receipt receipt, @org.jspecify.annotations.Nullable JobOutcome outcome,
                              boolean leased) {
        return Mono.<Void>create(sink -> {
            if (shutdown && outcome != null) {
                sink.error(new RiffleShutdownException("engine is closed; outcome of job " + receipt.jobId() + " not sent"));
                return;
            }
            // The count can never go below zero (CountedQueue), so a pump never takes a slot for nothing.
            int n = pending.add(new Pending(receipt, outcome, leased, sink, clock.nanos()));
            if (n >= batchSize) {
                pump(true);
            } else {
                // The first pending item starts the window; a full batch or the window, whichever comes first.
                armTimer(window.toNanos());
            }
        }).doFinally(s -> inFlight.remove(receipt.jobId(), receipt.runLease()));
    }

    /**
     * Arms the window timer unless one is armed already. The task is not kept in a swap: replacing a handle could
     * cancel a newer timer armed by another thread and strand its items; a stray pump after close is harmless. The
     * flag is set after the item is queued, so a timer that fired in between has already cleared it and this arms a
     * fresh one.
     */
    private void armTimer(long delayNanos) {
        if (!timerArmed.compareAndSet(false, true)) {
            return;
        }
        try {
            timer.schedule(() -> {
                timerArmed.set(false);
                pump(true);
            }, Math.max(1, delayNanos), java.util.concurrent.TimeUnit.NANOSECONDS);
        } catch (java.util.concurrent.RejectedExecutionException e) {
            timerArmed.set(false);
            pump(true); // timer gone (engine closing): send now rather than strand the item
        }
    }

    /**
     * Starts flushes while there is work and a free flush slot. {@code windowDue} means the window of the oldest
     * pending item has passed, so a partial batch may go; otherwise only full batches go (their completion
     * re-pumps, so items that arrived meanwhile are never stranded). Never throws: it runs on timer threads and in
     * the completion of other flushes, where an exception would escape onto a Reactor scheduler.
     */
    private void pump(boolean windowDue) {
        while (true) {
            int n = pending.count();
            if (n <= 0 || (!windowDue && n < batchSize)) {
                return;
            }
            int slots = flushing.get();
            if (slots >= flushConcurrency) {
                return; // a finishing flush pumps again
            }
            if (slots > 0 && n < companyFloor && !shutdown) {
                // A flush is in flight and only a few outcomes wait: a second concurrent flush would pay the whole
                // fixed cost of a statement and a commit for them, and on a loaded host that cost is what keeps the
                // first one slow. The finishing flush pumps again and takes them with whatever arrives meanwhile.
                // Bounded by age, so a flush that is slow or stuck (an outage, a lock) does not hold others back.
                Pending oldest = pending.peek();
                long waited = oldest == null ? 0 : clock.nanos() - oldest.queuedAt();
                if (waited < maxDeferNanos) {
                    armTimer(maxDeferNanos - waited);
                    return;
                }
            }
            if (!flushing.compareAndSet(slots, slots + 1)) {
                continue;
            }
            List<Pending> batch = pending.take(batchSize);
            if (batch.isEmpty()) {
                flushing.decrementAndGet();
                return; // counted items not queued yet: their submitter pumps or arms the timer after queueing
            }
            // Whatever happens inside the flush, even a bug that throws while building it, ends here: its own items
            // fail, its slot is given back, and the next batch goes.
            Mono.defer(() -> flush(batch))
                    .onErrorResume(e -> {
                        log.error("completion flush of {} failed unexpectedly; those outcomes were not recorded and"
                                + " their attempts stay open for rescue", batch.size(), e);
                        batch.forEach(x -> x.sink().error(e));
                        return Mono.empty();
                    })
                    .doFinally(s -> {
                        flushing.decrementAndGet();
                        // Whatever queued up while this flush ran has waited at least as long as the flush: send it.
                        pump(true);
                        if (shutdown && pending.count() == 0 && flushing.get() == 0) {
                            terminated.tryEmitEmpty();
                        }
                    })
                    .subscribe(v -> {}, e -> log.error("completion flush failed unexpectedly", e));
        }
    }

    private Mono<Void> flush(List<Pending> batch) {
        List<Pending> completes = new ArrayList<>(batch.size());
        List<Pending> closes = new ArrayList<>();
        for (Pending p : batch) {
            (p.isCompactComplete() ? completes : closes).add(p);
        }
        flushes.incrementAndGet();
        Mono<Void> a = completes.isEmpty() ? Mono.empty() : send(completes, true);
        Mono<Void> b = closes.isEmpty() ? Mono.empty() : send(closes, false);
        Mono<Void> both = tracing.complete(batch.size(), Mono.when(a, b));
        if (!meters.enabled()) {
            return both;
        }
        long started = clock.nanos();
        return both.doOnSuccess(v -> {
            meters.record(dev.riffle.engine.api.RiffleMeter.FLUSH_DURATION, clock.nanos() - started);
            meters.record(dev.riffle.engine.api.RiffleMeter.FLUSH_BATCH_SIZE, batch.size());
        });
    }

    private Mono<Void> send(List<Pending> items, boolean complete) {
        int n = items.size();
        Integer[] slots = new Integer[n];
        Long[] batchIds = new Long[n];
        Integer[] idxs = new Integer[n];
        Long[] jobIds = new Long[n];
        Long[] leases = new Long[n];
        Long[] receipts = new Long[n];
        String[] exits = new String[n];
        Long[] delays = new Long[n];
        String[] errors = new String[n];
        String[] errorClasses = new String[n];
        String[] errorTraces = new String[n];
        Boolean[] dlqs = new Boolean[n];
        Boolean[] leasedFlags = new Boolean[n];
        for (int i = 0; i < n; i++) {
            Pending p = items.get(i);
            Receipt r = p.receipt();
            slots[i] = r.claimSlot();
            batchIds[i] = r.batchId();
            idxs[i] = r.batchIndex();
            jobIds[i] = r.jobId();
            leases[i] = r.runLease();
            receipts[i] = r.receiptId();
            dlqs[i] = dlqDefault;
            leasedFlags[i] = p.leased();
            JobOutcome o = p.outcome();
            if (o == null) {
                exits[i] = "release";
            } else if (o instanceof JobOutcome.Retry x) {
                exits[i] = "retry";
                delays[i] = x.delay() == null ? null : x.delay().toMillis();
                errors[i] = x.error();
                errorClasses[i] = ErrorTrace.className(x.cause());
                errorTraces[i] = ErrorTrace.render(x.cause());
            } else if (o instanceof JobOutcome.Snooze x) {
                exits[i] = "snooze";
                delays[i] = x.delay().toMillis();
            } else if (o instanceof JobOutcome.Fail x) {
                exits[i] = "fail";
                errors[i] = x.reason();
                errorClasses[i] = ErrorTrace.className(x.cause());
                errorTraces[i] = ErrorTrace.render(x.cause());
            } else if (o instanceof JobOutcome.Cancel x) {
                exits[i] = "cancel";
                errors[i] = x.reason();
            } else {
                exits[i] = "complete";
            }
        }
        java.util.concurrent.atomic.AtomicBoolean retried = new java.util.concurrent.atomic.AtomicBoolean();
        String statement = complete ? "complete" : "close";
        return Mono.defer(() -> complete
                        ? db.query(statement, st -> st.bind("$1", slots).bind("$2", batchIds).bind("$3", idxs)
                                        .bind("$4", jobIds).bind("$5", leases).bind("$6", receipts),
                                row -> completeStatuses(n, row)).single()
                        : db.query(statement, st -> st.bind("$1", slots).bind("$2", batchIds).bind("$3", idxs)
                                        .bind("$4", jobIds).bind("$5", leases).bind("$6", receipts).bind("$7", exits)
                                        .bind("$8", delays).bind("$9", errors).bind("$10", dlqs)
                                        .bind("$11", leasedFlags).bind("$12", errorClasses)
                                        .bind("$13", errorTraces),
                                row -> row.get("status", String.class)).collectList())
                // A transient failure (connection refused or lost, server restarting, failover) is retried for as
                // long as the engine is open, with capped, jittered backoff: an outage of any length delays these
                // outcomes but never loses them, and never ends a worker. The attempts stay in flight meanwhile, so
                // the heartbeater keeps them fresh whenever it can reach the database.
                .retryWhen(Retry.backoff(Long.MAX_VALUE, FLUSH_RETRY_MIN_BACKOFF).maxBackoff(FLUSH_RETRY_MAX_BACKOFF)
                        .jitter(0.5).scheduler(timer)
                        .filter(e -> Db.isTransient(e) && !abandoned)
                        .doBeforeRetry(s -> {
                            retried.set(true);
                            outage.failing(statement, n, s.failure());
                        }))
                .doOnNext(statuses -> {
                    outage.recovered();
                    for (int i = 0; i < n; i++) {
                        Pending p = items.get(i);
                        CloseStatus status = CloseStatus.of(i < statuses.size() ? statuses.get(i) : "stale");
                        // APPLIED_BEFORE after a retry is this flush's own first try, which committed although its
                        // answer was lost. Any other closure is someone else's (cancel, rescue) and the caller must
                        // hear so, not a false "done" (issue #10 item 3, ADR 0006).
                        boolean applied = status == CloseStatus.APPLIED;
                        boolean ownBefore = status == CloseStatus.APPLIED_BEFORE;
                        if (applied || (ownBefore && retried.get())) {
                            (complete ? completed : closed).incrementAndGet();
                            p.sink().success();
                        } else {
                            rejected.incrementAndGet();
                            p.sink().error(new AttemptRejectedException(p.receipt().jobId(), p.receipt().runLease(),
                                    status == CloseStatus.STALE ? AttemptRejectedException.Reason.STALE
                                                           : AttemptRejectedException.Reason.ALREADY_CLOSED));
                        }
                    }
                })
                .onErrorResume(e -> {
                    log.error("{} flush of {} failed; the attempts stay open for rescue", statement, n, e);
                    items.forEach(p -> p.sink().error(e));
                    return Mono.empty();
                })
                .then();
    }

    /**
     * The per-item statuses of a completion from its one summary row (hotpath.sql, "complete"): every item is
     * applied except those listed. If the function answered for fewer or more items than were sent, which it never
     * should, the unlisted items are reported stale: rejected and left to rescue, never a false "done".
     */
    static List<String> completeStatuses(int n, io.r2dbc.spi.Readable row) {
        Integer total = row.get("total", Integer.class);
        Integer[] ords = row.get("other_ords", Integer[].class);
        String[] statuses = row.get("other_statuses", String[].class);
        String[] out = new String[n];
        java.util.Arrays.fill(out, total != null && total == n ? "applied" : "stale");
        if (ords != null && statuses != null) {
            for (int k = 0; k < ords.length && k < statuses.length; k++) {
                int i = ords[k] - 1;
                if (i >= 0 && i < n) {
                    out[i] = statuses[k];
                }
            }
        }
        return java.util.Arrays.asList(out);
    }

    /**
     * Logs a run of failing flushes once when it starts and once when it ends, however many flushes and retries
     * fail in between (an outage must read as two lines, not as dozens of stack traces).
     */
    private static final class Outage {
        private final java.util.concurrent.atomic.AtomicLong since = new java.util.concurrent.atomic.AtomicLong();
        private final java.util.concurrent.atomic.AtomicLong retries = new java.util.concurrent.atomic.AtomicLong();
        private final EngineClock clock;

        Outage(EngineClock clock) {
            this.clock = clock;
        }

        void failing(String statement, int items, Throwable cause) {
            retries.incrementAndGet();
            if (since.compareAndSet(0, clock.nanos() | 1)) {
                log.warn("completion flushes failing ({} flush of {}: {}); retrying with backoff up to {} for as long as"
                        + " the engine is open", statement, items, cause.toString(), FLUSH_RETRY_MAX_BACKOFF);
            }
        }

        void recovered() {
            if (since.get() == 0) {
                return; // the common case: a plain read per flush, no write to a shared counter
            }
            long t0 = since.getAndSet(0);
            if (t0 != 0) {
                log.info("completion flushes recovered after {} ms and {} retries",
                        (clock.nanos() - t0) / 1_000_000, retries.getAndSet(0));
            }
        }
    }

    /** Flushes done. */
    public long flushes() {
        return flushes.get();
    }

    /** Successful completions accepted. */
    public long completed() {
        return completed.get();
    }

    /** Non-success outcomes accepted. */
    public long closed() {
        return closed.get();
    }

    /** Outcomes rejected as already closed or stale. */
    public long rejected() {
        return rejected.get();
    }

    /** Stops accepting outcomes (releases still go out); completes once the buffered ones are flushed. */
    public Mono<Void> close() {
        shutdown = true;
        pump(true);
        if (pending.count() == 0 && flushing.get() == 0) {
            terminated.tryEmitEmpty();
        }
        return terminated.asMono();
    }

    /**
     * Stops accepting outcomes and stops retrying flushes that fail transiently: a flush still retrying fails its
     * items on its next failure, and their attempts are left to rescue. Called when a graceful close gave up.
     */
    public void dispose() {
        shutdown = true;
        abandoned = true;
    }
}
